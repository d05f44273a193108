"""ARM management plane with the real ``azure-mgmt-servicebus`` clients (sync and async)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)
from azure.mgmt.servicebus import ServiceBusManagementClient
from azure.mgmt.servicebus.aio import ServiceBusManagementClient as AsyncServiceBusManagementClient
from azure.mgmt.servicebus.models import Action, Rule, Ruleproperties, SBQueue, SBSubscription, SqlFilter
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from federator_emulator.testing import AsyncEmulatorCredential, EmulatorCredential, FakeCredential

RG, NS = "emulator", "ns1"


def _client(emu: Any, credential: Any = None, **kwargs: Any) -> ServiceBusManagementClient:
    ns = emu.namespace()
    kwargs.setdefault("connection_verify", str(emu.ca_path))
    return ServiceBusManagementClient(
        credential or EmulatorCredential(emu), ns.arm.subscription_id, base_url=emu.arm_endpoint, **kwargs
    )


def test_rule_created_through_arm_filters_the_fan_out_at_once(mgmt_emulator: Any) -> None:
    with _client(mgmt_emulator) as arm:
        arm.rules.delete(RG, NS, "t1", "repl", "$Default")
        rule = arm.rules.create_or_update(
            RG,
            NS,
            "t1",
            "repl",
            "mark",
            Rule(
                properties=Ruleproperties(
                    filter_type="SqlFilter",
                    sql_filter=SqlFilter(sql_expression="replication IS NULL"),
                    action=Action(sql_expression="SET replication = 1"),
                )
            ),
        )
        assert rule.properties is not None and rule.properties.sql_filter is not None
        assert rule.properties.sql_filter.sql_expression == "replication IS NULL"
        assert [r.name for r in arm.rules.list_by_subscriptions(RG, NS, "t1", "repl")] == ["mark"]

    with ServiceBusClient.from_connection_string(mgmt_emulator.connection_string()) as sb:
        with sb.get_topic_sender("t1") as sender:
            sender.send_messages(ServiceBusMessage("original"))
            sender.send_messages(ServiceBusMessage("echo", application_properties={"replication": 1}))
        with sb.get_subscription_receiver("t1", "repl", max_wait_time=2) as receiver:
            received = receiver.receive_messages(max_message_count=10, max_wait_time=2)
            for message in received:
                receiver.complete_message(message)
    assert [str(m) for m in received] == ["original"]
    props = {
        k.decode() if isinstance(k, bytes) else k: v
        for k, v in (received[0].application_properties or {}).items()
    }
    assert props["replication"] == 1


def test_queue_create_get_list_delete(mgmt_emulator: Any) -> None:
    with _client(mgmt_emulator) as arm:
        created = arm.queues.create_or_update(
            RG, NS, "arm-q", SBQueue(lock_duration="PT30S", max_delivery_count=3, requires_session=True)
        )
        assert created.id is not None and created.id.endswith("/namespaces/ns1/queues/arm-q")
        again = arm.queues.create_or_update(
            RG, NS, "arm-q", SBQueue(lock_duration="PT45S")
        )  # idempotent upsert
        assert again.lock_duration == timedelta(seconds=45) and again.max_delivery_count == 10
        assert "arm-q" in [q.name for q in arm.queues.list_by_namespace(RG, NS)]
        config = mgmt_emulator.call(lambda: mgmt_emulator.state().queue("arm-q").config)
        assert config.lock_duration_seconds == 45
        arm.queues.delete(RG, NS, "arm-q")
        with pytest.raises(ResourceNotFoundError):
            arm.queues.get(RG, NS, "arm-q")
        with pytest.raises(ResourceNotFoundError):
            arm.queues.delete(RG, NS, "arm-q")


def test_malformed_sql_is_a_400_with_the_parser_message(mgmt_emulator: Any) -> None:
    bad = Rule(
        properties=Ruleproperties(filter_type="SqlFilter", sql_filter=SqlFilter(sql_expression="a = = b"))
    )
    with _client(mgmt_emulator) as arm, pytest.raises(HttpResponseError) as caught:
        arm.rules.create_or_update(RG, NS, "t1", "all", "bad", bad)
    assert caught.value.status_code == 400
    assert "invalid SQL expression" in str(caught.value) and "a = = b" in str(caught.value)


def test_request_without_bearer_token_is_refused(mgmt_emulator: Any) -> None:
    with _client(mgmt_emulator, FakeCredential(token="")) as arm, pytest.raises(ClientAuthenticationError):
        arm.queues.get(RG, NS, "q1")


def test_unknown_namespace_is_not_found(mgmt_emulator: Any) -> None:
    with _client(mgmt_emulator) as arm, pytest.raises(ResourceNotFoundError):
        arm.queues.get("other-rg", NS, "q1")


def test_tls_is_real_without_the_ca_verification_fails(mgmt_emulator: Any) -> None:
    with _client(mgmt_emulator, connection_verify=True) as arm, pytest.raises(ServiceRequestError) as caught:
        arm.queues.get(RG, NS, "q1")
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)


@pytest.mark.asyncio
async def test_async_client_manages_subscriptions(mgmt_emulator: Any) -> None:
    ns = mgmt_emulator.namespace()
    async with AsyncServiceBusManagementClient(
        AsyncEmulatorCredential(mgmt_emulator),
        ns.arm.subscription_id,
        base_url=mgmt_emulator.arm_endpoint,
        connection_verify=str(mgmt_emulator.ca_path),
    ) as arm:
        sub = await arm.subscriptions.create_or_update(
            RG, NS, "t1", "async-sub", SBSubscription(max_delivery_count=2)
        )
        assert sub.max_delivery_count == 2
        rules = [r.name async for r in arm.rules.list_by_subscriptions(RG, NS, "t1", "async-sub")]
        assert rules == ["$Default"]
        await arm.subscriptions.delete(RG, NS, "t1", "async-sub")
        names = [s.name async for s in arm.subscriptions.list_by_topic(RG, NS, "t1")]
        assert "async-sub" not in names
