"""ATOM management plane with the real ``ServiceBusAdministrationClient`` (sync and async)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.mgmt.servicebus import ServiceBusManagementClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio.management import (
    ServiceBusAdministrationClient as AsyncServiceBusAdministrationClient,
)
from azure.servicebus.management import (
    CorrelationRuleFilter,
    ServiceBusAdministrationClient,
    SqlRuleAction,
    SqlRuleFilter,
)

from federator_emulator.testing import EmulatorCredential
from support.azure_clients import management_connection_string, with_key


def _connection_string(emu: Any, key: str | None = None) -> str:
    """The namespace's own Manage connection string, or the same with another ``key``."""
    own = management_connection_string(emu)
    return own if key is None else with_key(own, key)


def _admin(emu: Any, key: str | None = None) -> ServiceBusAdministrationClient:
    return ServiceBusAdministrationClient.from_connection_string(
        _connection_string(emu, key), connection_verify=str(emu.ca_path)
    )


def test_queue_create_update_get_list_delete(mgmt_emulator: Any) -> None:
    with _admin(mgmt_emulator) as admin:
        admin.create_queue("atom-q", max_delivery_count=4, lock_duration=timedelta(seconds=20))
        with pytest.raises(ResourceExistsError):
            admin.create_queue("atom-q")
        queue = admin.get_queue("atom-q")
        assert (queue.max_delivery_count, queue.lock_duration) == (4, timedelta(seconds=20))
        queue.max_delivery_count = 7
        admin.update_queue(queue)
        assert admin.get_queue("atom-q").max_delivery_count == 7
        config = mgmt_emulator.call(lambda: mgmt_emulator.state().queue("atom-q").config)
        assert config.max_delivery_count == 7
        assert "atom-q" in [q.name for q in admin.list_queues()]
        admin.delete_queue("atom-q")
        with pytest.raises(ResourceNotFoundError):
            admin.get_queue("atom-q")


def test_runtime_properties_count_messages(mgmt_emulator: Any) -> None:
    with ServiceBusClient.from_connection_string(mgmt_emulator.connection_string()) as sb:
        with sb.get_queue_sender("q1") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(4)])
        with sb.get_queue_receiver("q1", max_wait_time=2) as receiver:
            first, second = receiver.receive_messages(max_message_count=2, max_wait_time=2)
            receiver.complete_message(first)
            receiver.dead_letter_message(second, reason="test")
    with _admin(mgmt_emulator) as admin:
        runtime = admin.get_queue_runtime_properties("q1")
        assert (runtime.active_message_count, runtime.dead_letter_message_count) == (2, 1)
        assert runtime.total_message_count == 3
        assert [q.active_message_count for q in admin.list_queues_runtime_properties() if q.name == "q1"] == [
            2
        ]


def test_rule_changed_through_atom_is_seen_through_arm(mgmt_emulator: Any) -> None:
    with _admin(mgmt_emulator) as admin:
        admin.create_rule("t1", "all", "drift", filter=SqlRuleFilter("region = 'eu'"))
        rule = admin.get_rule("t1", "all", "drift")
        rule.filter = SqlRuleFilter("region = 'us'")
        rule.action = SqlRuleAction("SET drifted = 1")
        admin.update_rule("t1", "all", rule)
    ns = mgmt_emulator.namespace()
    with ServiceBusManagementClient(
        EmulatorCredential(mgmt_emulator),
        ns.arm.subscription_id,
        base_url=ns.https_endpoint,
        connection_verify=str(ns.ca_path),
    ) as arm:
        seen = arm.rules.get("emulator", "ns1", "t1", "all", "drift")
    assert seen.properties is not None and seen.properties.sql_filter is not None
    assert seen.properties.sql_filter.sql_expression == "region = 'us'"
    assert seen.properties.action is not None and seen.properties.action.sql_expression == "SET drifted = 1"
    with _admin(mgmt_emulator) as admin:
        admin.delete_rule("t1", "all", "drift")
        assert "drift" not in [r.name for r in admin.list_rules("t1", "all")]


def test_wrong_sas_key_is_refused(mgmt_emulator: Any) -> None:
    with _admin(mgmt_emulator, key="wrong-key") as admin, pytest.raises(ClientAuthenticationError):
        admin.get_queue("q1")


def test_malformed_sql_is_a_400_with_the_parser_message(mgmt_emulator: Any) -> None:
    with _admin(mgmt_emulator) as admin, pytest.raises(HttpResponseError) as caught:
        admin.create_rule("t1", "all", "bad", filter=SqlRuleFilter("a = = b"))
    assert caught.value.status_code == 400 and "invalid SQL expression" in str(caught.value)


@pytest.mark.asyncio
async def test_async_client_manages_topics_subscriptions_and_correlation_rules(mgmt_emulator: Any) -> None:
    async with AsyncServiceBusAdministrationClient.from_connection_string(
        _connection_string(mgmt_emulator), connection_verify=str(mgmt_emulator.ca_path)
    ) as admin:
        await admin.create_topic("atom-t", requires_duplicate_detection=True)
        await admin.create_subscription("atom-t", "s1", max_delivery_count=3)
        await admin.create_rule(
            "atom-t",
            "s1",
            "eu",
            filter=CorrelationRuleFilter(correlation_id="order", properties={"region": "eu"}),
        )
        rules = {r.name: r async for r in admin.list_rules("atom-t", "s1")}
        assert sorted(rules) == ["$Default", "eu"]
        assert isinstance(rules["eu"].filter, CorrelationRuleFilter)
        assert rules["eu"].filter.properties == {"region": "eu"}
        topic = await admin.get_topic_runtime_properties("atom-t")
        assert topic.subscription_count == 1
        assert (await admin.get_topic("atom-t")).requires_duplicate_detection is True
        await admin.delete_topic("atom-t")
        assert "atom-t" not in [t.name async for t in admin.list_topics()]


def _get(emu: Any, path: str) -> tuple[int, str, str]:
    """A raw ATOM GET with a namespace-wide SAS token: (status, content type, body)."""
    import ssl
    import time
    import urllib.error
    import urllib.request

    from federator_emulator import auth

    host = emu.namespace().fully_qualified_namespace
    token = auth.generate_sas_token(
        f"https://{host}/", "RootManageSharedAccessKey", emu.key(), int(time.time()) + 600
    )
    context = ssl.create_default_context(cafile=str(emu.ca_path))
    request = urllib.request.Request(f"https://{host}{path}", headers={"Authorization": token})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.headers.get_content_type(), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get_content_type(), error.read().decode()


@pytest.mark.parametrize(
    "path",
    ["/t1/Subscriptions/", "/T1/SUBSCRIPTIONS", "/t1/subscriptions/all/Rules/", "/$resources/QUEUES/"],
)
def test_paths_take_any_case_and_lists_a_trailing_slash_as_on_azure(mgmt_emulator: Any, path: str) -> None:
    status, content_type, body = _get(mgmt_emulator, path)
    assert (status, content_type) == (200, "application/atom+xml")
    assert "<feed" in body and "<entry>" in body


def test_entry_ids_name_entities_as_created_under_azures_path_words(mgmt_emulator: Any) -> None:
    host = mgmt_emulator.namespace().fully_qualified_namespace
    _, _, subscription = _get(mgmt_emulator, "/T1/subscriptions/ALL")
    assert f"<id>https://{host}/t1/Subscriptions/all</id>" in subscription
    _, _, rules = _get(mgmt_emulator, "/t1/subscriptions/all/rules")
    assert f"<id>https://{host}/t1/Subscriptions/all/Rules/$Default</id>" in rules


@pytest.mark.parametrize(
    ("path", "always"),
    [
        ("/q1", ["MaxSizeInMegabytes", "EnablePartitioning", "EnableBatchedOperations", "EnableExpress"]),
        ("/t1", ["MaxSizeInMegabytes", "SupportOrdering", "AutoDeleteOnIdle", "EnableExpress"]),
        (
            "/t1/Subscriptions/all",
            ["AutoDeleteOnIdle", "DeadLetteringOnFilterEvaluationExceptions", "Status"],
        ),
    ],
)
def test_descriptions_carry_the_properties_azure_always_returns(
    mgmt_emulator: Any, path: str, always: list[str]
) -> None:
    _, _, body = _get(mgmt_emulator, path)
    assert [name for name in always if f"<{name}>" not in body] == []


def test_a_path_no_route_serves_is_an_atom_error(mgmt_emulator: Any) -> None:
    status, content_type, body = _get(mgmt_emulator, "/no/such/path")
    assert (status, content_type) == (404, "application/atom+xml")
    assert body.startswith("<Error><Code>404</Code>")


def test_namespace_properties_are_served(mgmt_emulator: Any) -> None:
    with _admin(mgmt_emulator) as admin:
        properties = admin.get_namespace_properties()
    assert (properties.name, properties.messaging_sku, properties.namespace_type) == (
        "ns1",
        "Standard",
        "Messaging",
    )
