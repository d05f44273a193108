"""Management changes made at run time survive a restart with the same data dir, with the messages
waiting in the entities they made: ATOM (``ServiceBusAdministrationClient``, sync and async), ARM
(``azure-mgmt-servicebus``) and DNS (``azure-mgmt-dns``), all real clients."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.dns.models import CnameRecord, RecordSet
from azure.mgmt.servicebus.models import Action, Rule, Ruleproperties, SBQueue, SBSubscription, SqlFilter
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.aio.management import (
    ServiceBusAdministrationClient as AsyncServiceBusAdministrationClient,
)
from azure.servicebus.management import SqlRuleAction, SqlRuleFilter

from support.azure_clients import (
    admin_client,
    arm_client,
    dns_client,
    drain_subscription,
    management_connection_string,
    text_properties,
)

pytestmark = pytest.mark.timeout(120)

RG = "emulator"
CONFIG = {
    "namespaces": [{"name": "ns1", "queues": [{"name": "declared"}], "topics": [{"name": "declared-topic"}]}],
    "dnsZones": [{"name": "federator.test"}],
}


def test_entities_rules_records_and_their_messages_survive_a_restart(
    emulator_factory: Any, tmp_path: Path
) -> None:
    first = emulator_factory(CONFIG, tmp_path)
    with admin_client(first) as admin:
        admin.create_queue("orders", max_delivery_count=3, lock_duration=timedelta(seconds=45))
        admin.create_topic("events")
        admin.create_subscription("events", "recent")
        admin.delete_rule("events", "recent", "$Default")
        admin.create_rule(
            "events",
            "recent",
            "since",
            filter=SqlRuleFilter("at > @since", parameters={"@since": datetime(2020, 1, 1)}),
            action=SqlRuleAction("SET seen = @seen", parameters={"@seen": 7}),
        )
        admin.delete_queue("declared")  # a declared entity deleted at run time stays deleted
    with arm_client(first) as arm:
        arm.queues.create_or_update(RG, "ns1", "arm-queue", SBQueue(max_delivery_count=4))
        arm.subscriptions.create_or_update(RG, "ns1", "declared-topic", "arm-sub", SBSubscription())
        arm.rules.delete(RG, "ns1", "declared-topic", "arm-sub", "$Default")
        arm.rules.create_or_update(
            RG,
            "ns1",
            "declared-topic",
            "arm-sub",
            "eu",
            Rule(
                properties=Ruleproperties(
                    filter_type="SqlFilter",
                    sql_filter=SqlFilter(sql_expression="region = 'eu'"),
                    action=Action(sql_expression="SET routed = 1"),
                )
            ),
        )
    with dns_client(first) as dns:
        dns.record_sets.create_or_update(
            RG,
            "federator.test",
            "orders",
            "CNAME",
            RecordSet(ttl=60, cname_record=CnameRecord(cname="ns1.example")),
        )
        dns.record_sets.create_or_update(
            RG,
            "federator.test",
            "gone",
            "CNAME",
            RecordSet(ttl=60, cname_record=CnameRecord(cname="x.example")),
        )
        dns.record_sets.delete(RG, "federator.test", "gone", "CNAME")
    with ServiceBusClient.from_connection_string(first.connection_string()) as client:
        with client.get_queue_sender("orders") as sender:
            sender.send_messages(ServiceBusMessage("waiting"))
        with client.get_topic_sender("events") as sender:
            sender.send_messages(
                ServiceBusMessage("new", application_properties={"at": datetime(2021, 1, 1)})
            )
            sender.send_messages(
                ServiceBusMessage("old", application_properties={"at": datetime(2019, 1, 1)})
            )
        with client.get_topic_sender("declared-topic") as sender:
            sender.send_messages(ServiceBusMessage("eu", application_properties={"region": "eu"}))
    first.stop()

    second = emulator_factory(CONFIG, tmp_path)
    with admin_client(second) as admin:
        assert sorted(q.name for q in admin.list_queues()) == ["arm-queue", "orders"]
        orders = admin.get_queue("orders")
        assert (orders.max_delivery_count, orders.lock_duration) == (3, timedelta(seconds=45))
        assert admin.get_queue("arm-queue").max_delivery_count == 4
        [rule] = admin.list_rules("events", "recent")
        assert (rule.name, rule.filter.sql_expression, rule.filter.parameters) == (
            "since",
            "at > @since",
            {"@since": datetime(2020, 1, 1)},
        )
        assert rule.action.parameters == {"@seen": 7}
        assert [r.name for r in admin.list_rules("declared-topic", "arm-sub")] == ["eu"]
    with dns_client(second) as dns:
        assert (
            dns.record_sets.get(RG, "federator.test", "orders", "CNAME").cname_record.cname == "ns1.example"
        )
        with pytest.raises(ResourceNotFoundError):
            dns.record_sets.get(RG, "federator.test", "gone", "CNAME")
    with ServiceBusClient.from_connection_string(second.connection_string()) as client:
        with client.get_queue_receiver("orders") as receiver:
            assert [str(m) for m in receiver.receive_messages(max_wait_time=5)] == ["waiting"]
        [new] = drain_subscription(client, "events", "recent", 1)
        assert (str(new), text_properties(new)["seen"]) == ("new", 7)
        [eu] = drain_subscription(client, "declared-topic", "arm-sub", 1)
        assert text_properties(eu) == {"region": "eu", "routed": 1, "RuleName": "eu"}
        with client.get_topic_sender("events") as sender:  # the rule still filters what comes next
            sender.send_messages(
                ServiceBusMessage("later", application_properties={"at": datetime(2022, 1, 1)})
            )
            sender.send_messages(
                ServiceBusMessage("older", application_properties={"at": datetime(2018, 1, 1)})
            )
        [later] = drain_subscription(client, "events", "recent", 1)
        assert str(later) == "later"


@pytest.mark.asyncio
async def test_async_created_subscription_and_its_messages_survive_a_restart(
    emulator_factory: Any, tmp_path: Path
) -> None:
    first = emulator_factory(CONFIG, tmp_path)
    async with AsyncServiceBusAdministrationClient.from_connection_string(
        management_connection_string(first), connection_verify=str(first.ca_path)
    ) as admin:
        await admin.create_subscription("declared-topic", "audit", max_delivery_count=2)
    async with (
        AsyncServiceBusClient.from_connection_string(first.connection_string()) as client,
        client.get_topic_sender("declared-topic") as sender,
    ):
        await sender.send_messages([ServiceBusMessage("one"), ServiceBusMessage("two")])
    first.stop()

    second = emulator_factory(CONFIG, tmp_path)
    async with AsyncServiceBusAdministrationClient.from_connection_string(
        management_connection_string(second), connection_verify=str(second.ca_path)
    ) as admin:
        subscription = await admin.get_subscription("declared-topic", "audit")
        assert subscription.max_delivery_count == 2
        assert [r.name async for r in admin.list_rules("declared-topic", "audit")] == ["$Default"]
    async with (
        AsyncServiceBusClient.from_connection_string(second.connection_string()) as client,
        client.get_subscription_receiver("declared-topic", "audit") as receiver,
    ):
        got = await receiver.receive_messages(max_message_count=5, max_wait_time=5)
    assert [(str(m), m.sequence_number) for m in got] == [("one", 1), ("two", 2)]
