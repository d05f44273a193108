"""Fan-out by rule, as Azure documents it ("Topic filters and actions"): per subscription, one copy per
matching rule with an action (that rule's action only, and the user property ``RuleName``), plus one
unchanged copy for all matching rules without an action. Rules are created with the real
``ServiceBusAdministrationClient``; messages go through the real ``azure-servicebus`` clients."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.aio.management import (
    ServiceBusAdministrationClient as AsyncServiceBusAdministrationClient,
)
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleAction, SqlRuleFilter

from federator.local.references import LocalSecrets
from federator.planning.mirror import plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import provision_member
from federator.provision.model import desired_by_member
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from support.azure_clients import (
    admin_client,
    drain_subscription,
    management_connection_string,
    text_properties,
)

pytestmark = pytest.mark.timeout(90)

CONFIG = {
    "namespaces": [
        {"name": "west", "topics": [{"name": "orders", "subscriptions": [{"name": "audit"}]}]},
        {"name": "east", "topics": [{"name": "orders"}]},
    ]
}


@pytest.fixture
def emu(emulator_factory: Any) -> Any:
    return emulator_factory(CONFIG)


def admin(emu: Any) -> ServiceBusAdministrationClient:
    return admin_client(emu, "west")


def send(emu: Any, *messages: ServiceBusMessage) -> None:
    with (
        ServiceBusClient.from_connection_string(emu.connection_string("west")) as client,
        client.get_topic_sender("orders") as sender,
    ):
        sender.send_messages(list(messages))


def drain(emu: Any, subscription: str, expected: int) -> list[ServiceBusReceivedMessage]:
    with ServiceBusClient.from_connection_string(emu.connection_string("west")) as client:
        return drain_subscription(client, "orders", subscription, expected)


def test_documented_example_five_rules_two_with_actions_give_three_copies(emu: Any) -> None:
    with admin(emu) as client:
        client.create_subscription("orders", "five")
        client.delete_rule("orders", "five", "$Default")
        for name in ("plain-a", "plain-b", "plain-c"):
            client.create_rule("orders", "five", name, filter=SqlRuleFilter("region = 'eu'"))
        client.create_rule(
            "orders", "five", "act-1", filter=SqlRuleFilter("1=1"), action=SqlRuleAction("SET one = 1")
        )
        client.create_rule(
            "orders",
            "five",
            "act-2",
            filter=SqlRuleFilter("EXISTS(region)"),
            action=SqlRuleAction("SET two = 2; REMOVE region"),
        )
    send(emu, ServiceBusMessage("m", application_properties={"region": "eu"}))
    copies = drain(emu, "five", 3)
    assert [text_properties(m) for m in copies] == [
        {"region": "eu"},  # all rules without an action: one unchanged copy, no RuleName
        {"region": "eu", "one": 1, "RuleName": "act-1"},  # each action on its own copy only
        {"two": 2, "RuleName": "act-2"},
    ]
    assert [str(m) for m in copies] == ["m"] * 3


def test_copies_are_made_only_for_the_rules_that_match(emu: Any) -> None:
    with admin(emu) as client:
        client.create_subscription("orders", "some")
        client.delete_rule("orders", "some", "$Default")
        client.create_rule("orders", "some", "eu", filter=SqlRuleFilter("region = 'eu'"))
        client.create_rule(
            "orders", "some", "big", filter=SqlRuleFilter("total > 100"), action=SqlRuleAction("SET big = 1")
        )
    send(
        emu,
        ServiceBusMessage("eu-small", application_properties={"region": "eu", "total": 5}),
        ServiceBusMessage("us-big", application_properties={"region": "us", "total": 500}),
        ServiceBusMessage("us-small", application_properties={"region": "us", "total": 5}),
    )
    got = drain(emu, "some", 2)
    assert [(str(m), text_properties(m).get("RuleName")) for m in got] == [
        ("eu-small", None),
        ("us-big", "big"),
    ]


def test_copies_in_one_subscription_get_their_own_increasing_sequence_numbers(emu: Any) -> None:
    with admin(emu) as client:
        client.create_subscription("orders", "twice")  # keeps $Default, no action
        client.create_rule(
            "orders", "twice", "mark", filter=SqlRuleFilter("1=1"), action=SqlRuleAction("SET marked = 1")
        )
    send(emu, ServiceBusMessage("first"), ServiceBusMessage("second"))
    twice = drain(emu, "twice", 4)
    audit = drain(emu, "audit", 2)
    assert [(str(m), m.sequence_number) for m in twice] == [
        ("first", 1),
        ("first", 2),
        ("second", 3),
        ("second", 4),
    ]
    # The first copy keeps the topic's number; the topic skips the numbers extra copies took.
    assert [(str(m), m.sequence_number) for m in audit] == [("first", 1), ("second", 3)]


def mirror_spec() -> ServiceBusMirrorSpec:
    members = [{"name": n, "connection": {"emulator": {"namespace": n}}} for n in ("west", "east")]
    return ServiceBusMirrorSpec.model_validate(
        {"pattern": "allActive", "topicName": "orders", "members": members}
    )


@pytest.mark.asyncio
async def test_all_active_subscription_keeping_default_gets_the_duplicate_federator_provisioning_removes(
    emu: Any,
) -> None:
    spec = mirror_spec()
    plan = plan_mirror(name="orders", namespace="default", spec=spec)
    [planned] = [s for s in plan.subscriptions if s.member == "west"]
    [rule] = planned.rules
    async with AsyncServiceBusAdministrationClient.from_connection_string(
        management_connection_string(emu, "west"), connection_verify=str(emu.ca_path)
    ) as client:
        # By hand, as the pattern reads but forgetting that a new subscription has $Default:
        await client.create_subscription("orders", planned.name)
        await client.create_rule(
            "orders",
            planned.name,
            rule.name,
            filter=SqlRuleFilter(rule.sql_filter),
            action=SqlRuleAction(rule.sql_action),
        )
        by_hand = await send_and_drain(emu, planned.name, 2)
        # Azure delivers the marked copy and, for $Default, the unmarked original, which the peer's own
        # replication subscription would send straight back.
        assert by_hand == [{}, {"replication": 1, "RuleName": "replication"}]
        await client.delete_subscription("orders", planned.name)

    env = ManagementEnvironment(
        connection_verify=str(emu.ca_path),
        emulator_management={ns: management_connection_string(emu, ns) for ns in ("west", "east")},
    )
    west = next(m for m in spec.members if m.name == "west")
    desired = desired_by_member(plan, ["west", "east"])["west"]
    outcome = await provision_member(LocalSecrets({}), "default", west, desired, (), env)
    assert outcome.state == "Provisioned", outcome.message
    provisioned = await send_and_drain(emu, planned.name, 1)
    assert provisioned == [{"replication": 1, "RuleName": "replication"}]


async def send_and_drain(emu: Any, subscription: str, expected: int) -> list[dict[str, Any]]:
    """Send one message to west's topic and return the properties of the copies ``subscription`` got."""
    async with AsyncServiceBusClient.from_connection_string(emu.connection_string("west")) as client:
        async with client.get_topic_sender("orders") as sender:
            await sender.send_messages(ServiceBusMessage("order-1"))
        async with client.get_subscription_receiver("orders", subscription) as receiver:
            got = await receiver.receive_messages(max_message_count=expected + 1, max_wait_time=2)
            await asyncio.gather(*(receiver.complete_message(m) for m in got))
            assert await receiver.peek_messages(max_message_count=10) == []
    assert len(got) == expected, [text_properties(m) for m in got]
    return [text_properties(m) for m in got]
