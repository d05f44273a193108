"""A Python worker keeps one open sender per Service Bus target entity for all its write tasks: opening
one and closing it again cost more than sending a batch of 500 messages. A sender a send failed on is
not kept: the next task opens a new one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from federator_contract.taskconfig import TaskConfig
from federator_spark.events import Event
from federator_spark.outages import EndpointRefusedError
from federator_spark.plan import TargetPlan, plan_from_task
from federator_spark.sinks.servicebus import ServiceBusPublisher, forget_sender, kept_sender
from support.connections import connection_files
from support.queues import queue_bodies
from support.rows import event_row

pytestmark = pytest.mark.slow  # an emulator, a few seconds

CONNECTION = {"emulator": {"namespace": "basic"}}


@pytest.fixture
def emulator(emulator_factory: Any) -> Any:
    return emulator_factory({"namespaces": [{"name": "basic", "queues": [{"name": "out"}]}]})


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
