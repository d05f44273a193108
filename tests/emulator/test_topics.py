"""Topics: fan-out to subscriptions filtered by SQL and correlation rules, with actions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient

from support.azure_clients import drain_subscription

pytestmark = pytest.mark.timeout(60)

TOPIC_CONFIG = {
    "namespaces": [
        {
            "name": "ns",
            "topics": [
                {
                    "name": "events",
                    "subscriptions": [
                        {"name": "everything"},
                        {
                            "name": "replicate",
                            "rules": [
                                {
                                    "name": "mark",
                                    "sqlFilter": "replication IS NULL",
                                    "sqlAction": "SET replication = 1; SET sys.TimeToLive = '0:2:0'",
                                }
                            ],
                        },
                        {
                            "name": "orders",
                            "rules": [
                                {
                                    "name": "by-correlation",
                                    "correlationFilter": {
                                        "correlationId": "order",
                                        "properties": {"region": "eu"},
                                    },
                                }
                            ],
                        },
                    ],
                }
            ],
        }
    ]
}


@pytest.fixture
def topic_emulator(emulator_factory):
    return emulator_factory(TOPIC_CONFIG)


def drain(client: ServiceBusClient, subscription: str, expected: int) -> list:
    return drain_subscription(client, "events", subscription, expected)


def test_sql_action_marks_the_copy_and_filter_skips_marked_messages(topic_emulator):
    with ServiceBusClient.from_connection_string(topic_emulator.connection_string()) as client:
        with client.get_topic_sender("events") as sender:
            sender.send_messages(ServiceBusMessage("fresh"))
            sender.send_messages(ServiceBusMessage("seen", application_properties={"replication": 5}))
        replicated = drain(client, "replicate", 1)
        everything = drain(client, "everything", 2)
    assert [str(m) for m in replicated] == ["fresh"]
    # A rule with an action makes its own copy, named by the rule (Azure's RuleName property).
    assert replicated[0].application_properties == {b"replication": 1, b"RuleName": b"mark"}
    assert replicated[0].time_to_live == timedelta(minutes=2)
    assert [str(m) for m in everything] == ["fresh", "seen"]
    assert everything[0].application_properties is None  # the action changed only its own copy


def test_correlation_filter_needs_every_given_field(topic_emulator):
    with ServiceBusClient.from_connection_string(topic_emulator.connection_string()) as client:
        with client.get_topic_sender("events") as sender:
            sender.send_messages(
                ServiceBusMessage("match", correlation_id="order", application_properties={"region": "eu"})
            )
            sender.send_messages(
                ServiceBusMessage(
                    "wrong-region", correlation_id="order", application_properties={"region": "us"}
                )
            )
            sender.send_messages(ServiceBusMessage("no-correlation", application_properties={"region": "eu"}))
        orders = drain(client, "orders", 1)
    assert [str(m) for m in orders] == ["match"]


def test_copies_share_the_topic_sequence_number(topic_emulator):
    with ServiceBusClient.from_connection_string(topic_emulator.connection_string()) as client:
        with client.get_topic_sender("events") as sender:
            sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
        everything = drain(client, "everything", 2)
        replicated = drain(client, "replicate", 2)
    assert [m.sequence_number for m in everything] == [m.sequence_number for m in replicated] == [1, 2]


def test_rules_added_at_runtime_apply_to_the_next_message(topic_emulator):
    from federator_contract.emulatorconfig import RuleConfig

    state = topic_emulator.state()
    topic_emulator.call(lambda: state.delete_rule("events", "everything", "$Default"))
    topic_emulator.call(
        lambda: state.create_rule(
            "events", "everything", RuleConfig(name="only-b", sql_filter="sys.Label = 'b'")
        )
    )
    with ServiceBusClient.from_connection_string(topic_emulator.connection_string()) as client:
        with client.get_topic_sender("events") as sender:
            sender.send_messages([ServiceBusMessage("x", subject="a"), ServiceBusMessage("y", subject="b")])
        everything = drain(client, "everything", 1)
    assert [str(m) for m in everything] == ["y"]


def test_malformed_sql_in_config_is_refused(emulator_factory):
    from federator_contract.sql import SqlSyntaxError

    config = {
        "namespaces": [
            {
                "name": "ns",
                "topics": [
                    {
                        "name": "t",
                        "subscriptions": [
                            {"name": "s", "rules": [{"name": "bad", "sqlFilter": "replication IS"}]}
                        ],
                    }
                ],
            }
        ]
    }
    with pytest.raises(SqlSyntaxError):
        emulator_factory(config)


@pytest.mark.asyncio
async def test_async_subscription_receiver_gets_fanned_out_copy(topic_emulator):
    async with AsyncServiceBusClient.from_connection_string(topic_emulator.connection_string()) as client:
        async with client.get_topic_sender("events") as sender:
            await sender.send_messages(ServiceBusMessage("hello"))
        async with client.get_subscription_receiver("events", "replicate") as receiver:
            (message,) = await receiver.receive_messages(max_wait_time=5)
            await receiver.complete_message(message)
    assert str(message) == "hello"
    assert message.application_properties == {b"replication": 1, b"RuleName": b"mark"}
