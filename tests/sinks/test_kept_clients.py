"""A Python worker keeps its producers and senders open between write tasks, and closes one that no task used
for ``IDLE_CLOSE_SECONDS``, between tasks only: in a shared application a removed task's target does not
keep its connections in every worker for as long as the application runs. Closing one whose broker went
away still closes every socket it opened."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from azure.eventhub import EventData
from azure.servicebus import ServiceBusMessage

from federator_contract.taskconfig import TaskConfig
from federator_spark.plan import TargetPlan
from federator_spark.planning import plan_from_task
from federator_spark.sinks import eventhubs_producers, kept_clients, servicebus
from federator_spark.sinks.kept_clients import IDLE_CLOSE_SECONDS, KeptClients
from federator_spark.sinks.replication import ReplicationWriter
from support.connections import connection_files
from support.rows import event_row
from support.sockets import unclosed_sockets

LATER = IDLE_CLOSE_SECONDS + 1


class Closed:
    """What a cache of clients closed, in order; closing ``"broken"`` raises."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, client: str) -> None:
        self.names.append(client)
        if client == "broken":
            raise OSError("the socket is gone")


def kept(*names: str) -> tuple[KeptClients[str, str], Closed]:
    closed = Closed()
    clients: KeptClients[str, str] = KeptClients("test clients", closed)
    for name in names:
        clients.get(name, lambda name=name: name)
    return clients, closed


def test_a_client_is_made_once_and_kept_for_the_next_tasks() -> None:
    made: list[str] = []
    clients, closed = kept()
    for _ in range(3):
        assert clients.get("hub", lambda: made.append("hub") or "client") == "client"
    assert made == ["hub"]
    assert clients.reap(time.monotonic()) == 0 and closed.names == []


def test_a_client_no_task_used_for_the_idle_time_is_closed_and_made_again_when_needed() -> None:
    clients, closed = kept("removed", "busy")
    clients.get("busy", lambda: "unused")
    assert clients.reap(time.monotonic() + IDLE_CLOSE_SECONDS / 2) == 0
    clients.get("busy", lambda: "unused")  # used again: its idle time starts over
    assert clients.reap(time.monotonic() + LATER) == 2
    assert sorted(closed.names) == ["busy", "removed"] and len(clients) == 0
    assert clients.get("removed", lambda: "reopened") == "reopened"


def test_nothing_is_closed_while_a_task_runs() -> None:
    clients, closed = kept("hub")
    with kept_clients.task_running():
        assert clients.reap(time.monotonic() + LATER) == 0
    assert closed.names == []
    assert clients.reap(time.monotonic() + LATER) == 1


def test_a_client_that_fails_to_close_does_not_keep_the_others_open() -> None:
    clients, closed = kept("broken", "fine")
    assert clients.reap(time.monotonic() + LATER) == 2
    assert sorted(closed.names) == ["broken", "fine"] and len(clients) == 0
    clients.get("again", lambda: "again")
    clients.forget("again")  # after a failure: closed at once
    assert closed.names[-1] == "again" and len(clients) == 0


CONNECTION = {"emulator": {"namespace": "basic"}}


@pytest.fixture
def task(emulator_factory: Any, tmp_path: Any) -> tuple[Any, TaskConfig]:
    """An emulator with an event hub and a queue, and a task replicating to both."""
    emulator = emulator_factory(
        {"namespaces": [{"name": "basic", "eventHubs": [{"name": "hub"}], "queues": [{"name": "out"}]}]}
    )
    raw = {
        "kind": "ReplicationTask",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {
            "source": {"eventHub": {"connection": CONNECTION, "eventHubName": "src"}},
            "targets": [
                {"name": "hub", "eventHub": {"connection": CONNECTION, "eventHubName": "hub"}},
                {"name": "queue", "serviceBus": {"connection": CONNECTION, "queueName": "out"}},
            ],
        },
        "checkpointLocation": str(tmp_path / "checkpoint"),
        "emulatorConnectionFiles": connection_files(tmp_path / "connections", emulator, ["basic"]),
    }
    return emulator, TaskConfig.from_raw(raw)


def send_one_each(plans: dict[str, TargetPlan]) -> None:
    """Open this worker's producer and sender to the targets, and send through each."""
    producer = eventhubs_producers.prepare(plans["hub"])
    producer.ready()
    batch = producer.client.create_batch(partition_id="0")
    batch.add(EventData(b"one"))
    producer.client.send_batch(batch)
    servicebus.kept_sender(plans["queue"]).send_messages(ServiceBusMessage(b"one"))


@pytest.mark.slow  # an emulator, a few seconds
def test_a_write_task_keeps_its_clients_open_while_it_runs(task: Any) -> None:
    _, config = task
    reaped: list[int] = []

    def rows() -> Iterator[Any]:
        yield event_row(0, b"e0")
        reaped.append(servicebus._senders.reap(time.monotonic() + LATER))
        reaped.append(eventhubs_producers._producers.reap(time.monotonic() + LATER))
        yield event_row(1, b"e1")

    (report,) = ReplicationWriter(plan_from_task(config)).write(rows()).reports
    assert report.out == {"hub": 2, "queue": 2} and reaped == [0, 0]
    assert servicebus._senders.reap(time.monotonic() + LATER) == 1  # the task has ended
    assert eventhubs_producers._producers.reap(time.monotonic() + LATER) == 1


@pytest.mark.slow  # an emulator, a few seconds
def test_kept_clients_whose_broker_went_away_are_closed_with_every_socket(task: Any) -> None:
    emulator, config = task
    send_one_each(plan_from_task(config).targets)
    emulator.stop()

    assert eventhubs_producers._producers.reap(time.monotonic() + LATER) == 1
    assert servicebus._senders.reap(time.monotonic() + LATER) == 1
    assert unclosed_sockets() == [], "a closed client left a socket to the garbage collector"
    assert len(eventhubs_producers._producers) == len(servicebus._senders) == 0  # the next task opens anew
