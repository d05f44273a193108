"""A Python worker keeps one open sender per Service Bus target entity for all its write tasks: opening
one and closing it again cost more than sending a batch of 500 messages. A sender a send failed on is
not kept: the next task opens a new one. A receiver gets back every field the sink sets, its
application properties with their AMQP types."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient

from federator_contract.taskconfig import TaskConfig
from federator_spark.events import Event
from federator_spark.outages import EndpointRefusedError
from federator_spark.plan import TargetPlan
from federator_spark.planning import plan_from_task
from federator_spark.sinks.servicebus import ServiceBusPublisher, forget_sender, kept_sender
from federator_spark.sinks.undeliverable import Undeliverable
from support.connections import connection_files
from support.queues import queue_bodies
from support.rows import event_row

pytestmark = pytest.mark.slow  # an emulator, a few seconds

CONNECTION = {"emulator": {"namespace": "basic"}}


@pytest.fixture
def emulator(emulator_factory: Any) -> Any:
    queues = [{"name": "out"}, {"name": "sessions", "requiresSession": True}]
    return emulator_factory({"namespaces": [{"name": "basic", "queues": queues}]})


@pytest.fixture
def target(emulator: Any, tmp_path: Any) -> Iterator[Any]:
    """A target plan for a queue of the emulator, by name; its kept sender is closed afterwards."""
    made: list[TargetPlan] = []

    def plan(queue: str) -> TargetPlan:
        raw = {
            "kind": "ReplicationTask",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {
                "source": {"eventHub": {"connection": CONNECTION, "eventHubName": "src"}},
                "targets": [{"name": "out", "serviceBus": {"connection": CONNECTION, "queueName": queue}}],
            },
            "checkpointLocation": str(tmp_path / "checkpoint"),
            "emulatorConnectionFiles": connection_files(tmp_path / "connections", emulator, ["basic"]),
        }
        made.append(plan_from_task(TaskConfig.from_raw(raw)).targets["out"])
        return made[-1]

    yield plan
    for each in made:
        forget_sender(each)


def publish(target: TargetPlan, *bodies: str) -> ServiceBusPublisher:
    """What a write task does with its publisher: add, flush, close."""
    publisher = ServiceBusPublisher(target)
    for sequence, body in enumerate(bodies):
        publisher.add(Event.from_row(event_row(sequence, body)), {})
    publisher.flush()
    publisher.close()
    return publisher


def received(emulator: Any, queue: str) -> list[str]:
    return queue_bodies(emulator.connection_string("basic"), queue)


def test_the_tasks_of_a_worker_send_through_one_sender_per_entity(emulator, target):
    out = target("out")

    first = publish(out, "a", "b")
    second = publish(out, "c")  # the first task closed its publisher: the sender stays open

    assert second._sender is first._sender
    assert sorted(received(emulator, "out")) == ["a", "b", "c"]


def test_a_sender_a_send_failed_on_is_not_kept(target):
    missing = target("no-such-queue")
    publisher = ServiceBusPublisher(missing)

    with pytest.raises(EndpointRefusedError):  # refused for good: retrying cannot help
        publisher.add(Event.from_row(event_row(0, "x")), {})

    assert kept_sender(missing) is not publisher._sender


# What a Service Bus source's message carries to the sink (sources/servicebus_records.py).
SOURCE_SYSTEM = {
    "source_kind": "serviceBus",
    "message_id": "order-7",
    "content_type": "application/json",
    "correlation_id": "c-9",
    "subject": "order",
    "to": "orders",
    "reply_to": "replies",
    "time_to_live": "3600",
}
TYPED = {
    "text": "a",
    "int": 5,
    "long": 2**40,
    "ratio": 0.25,
    "flag": True,
    "at": datetime(2026, 11, 25, 12, 30, 5, tzinfo=UTC),
    "id": uuid.UUID(int=7),
}


def test_a_receiver_gets_every_field_of_a_message_back(emulator, target):
    row = event_row(3, '{"id": 7}') | {"partition_key": "device-7", "system_properties": SOURCE_SYSTEM}
    publisher = ServiceBusPublisher(target("sessions"))
    publisher.add(Event.from_row(row), TYPED)
    publisher.flush()

    with (
        ServiceBusClient.from_connection_string(emulator.connection_string("basic")) as client,
        client.get_queue_receiver("sessions", session_id="device-7", max_wait_time=5) as receiver,
    ):
        (message,) = receiver.receive_messages(max_wait_time=5)
        receiver.complete_message(message)

    assert str(message) == '{"id": 7}'
    assert (message.message_id, message.session_id, message.partition_key) == (
        "order-7",
        "device-7",
        "device-7",
    )
    assert (message.content_type, message.correlation_id) == ("application/json", "c-9")
    assert (message.subject, message.to, message.reply_to) == ("order", "orders", "replies")
    assert message.time_to_live == timedelta(hours=1)
    assert message.application_properties == {  # SDK receivers give strings as bytes, timestamps as ms
        b"text": b"a",
        b"int": 5,
        b"long": 2**40,
        b"ratio": 0.25,
        b"flag": True,
        b"at": int(TYPED["at"].timestamp() * 1000),
        b"id": uuid.UUID(int=7),
    }


def test_a_session_id_longer_than_service_bus_allows_is_undeliverable(target):
    publisher = ServiceBusPublisher(target("out"))
    row = event_row(0, "x") | {"partition_key": "k" * 129}

    with pytest.raises(Undeliverable, match="SessionId of 129 characters"):
        publisher.add(Event.from_row(row), {})
