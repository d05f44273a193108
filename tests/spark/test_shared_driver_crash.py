"""A shared driver (``federator_spark.host`` in a process of its own, ``local[2]``) running an Event Hubs
task and a Service Bus task with effectively-once delivery is SIGKILLed whole while producers keep
sending and both tasks are writing; started again on the same checkpoints, it drains both, and each
task's target holds every event sent exactly once and its status counts each once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusMessage
from spark_helpers import eh_endpoint, kill_session, send, start_host, task_config
from test_crash_restart import assert_exactly_once, target_count
from test_fleet_queries import free_port, place, wait_until
from test_sb_source import LOCK_SECONDS, receive_all, sb_endpoint, send_messages, stored
from test_shared_driver import fetch, states

from federator_contract.appstatus import read_status
from federator_contract.driverstatus import task_status_path
from federator_spark.sinks.replay import Intents

pytestmark = [pytest.mark.slow, pytest.mark.jvm, pytest.mark.timeout(1200)]

CONFIG = {
    "namespaces": [
        {
            "name": "ns1",
            # The Event Hubs task's hubs keep test_crash_restart's names: its read-back checks them.
            "eventHubs": [{"name": "src", "partitionCount": 2}, {"name": "dst", "partitionCount": 2}],
            "queues": [
                {"name": "jobs", "lockDurationSeconds": LOCK_SECONDS},
                {"name": "jobs-copy", "requiresDuplicateDetection": True},
            ],
        }
    ]
}
BURST = 5  # events per send, a send every PAUSE_SECONDS: every batch has something to write
PAUSE_SECONDS = 0.5
PER_TRIGGER = 100  # the backlog of the time the driver was down drains in a few batches
BATCHES_BEFORE_THE_KILL = 3


class Producer(threading.Thread):
    """Sends numbered events, ``BURST`` at a time, until stopped; ``stop`` returns how many it sent."""

    def __init__(self, emit: Callable[[range], None]) -> None:
        super().__init__(daemon=True, name="producer")
        self.emit = emit
        self.sent = 0
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopping.wait(PAUSE_SECONDS):
                self.emit(range(self.sent, self.sent + BURST))
                self.sent += BURST
        except BaseException as error:  # reported by stop(): a silent producer would pass for a quiet one
            self.error = error

    def stop(self) -> int:
        self.stopping.set()
        self.join(timeout=60)
        assert self.error is None, self.error
        return self.sent


@contextmanager
def producing(cs: str) -> Iterator[dict[str, Producer]]:
    """One producer per task, sending until stopped (at the latest when the block ends): events on each
    partition of the hub in turn, messages on the queue."""

    def events(numbers: range) -> None:
        partition = str(numbers.start // BURST % 2)  # one partition per send: one batch per send
        send(cs, "src", [{"body": f"h{i}", "partition": partition} for i in numbers])

    def messages(numbers: range) -> None:
        send_messages(cs, "jobs", [ServiceBusMessage(f"q{i}") for i in numbers])

    sources = {"hubs": Producer(events), "queues": Producer(messages)}
    for producer in sources.values():
        producer.start()
    try:
        yield sources
    finally:
        for producer in sources.values():
            producer.stopping.set()


def task_configs(directory: Path, tmp_path: Path, emulator: Any, port: int) -> None:
    delivery = {"delivery": {"effectivelyOnce": True}}
    runtime = {"runtime": {"maxEventsPerTrigger": PER_TRIGGER, "triggerIntervalSeconds": 0}}
    specs = {
        "hubs": {
            "source": eh_endpoint("ns1", "src"),
            "targets": [{"name": "copy", **eh_endpoint("ns1", "dst")}],
        },
        "queues": {
            "source": sb_endpoint(queueName="jobs", maxMessagesPerBatch=PER_TRIGGER),
            "targets": [{"name": "copy", **sb_endpoint(queueName="jobs-copy")}],
        },
    }
    for name, spec in specs.items():
        raw = task_config(tmp_path, emulator, {**spec, **delivery, **runtime}, name=name)
        place(directory, f"{name}.json", {**raw, "metricsPort": port})


def events_out(status: dict[str, Any]) -> int:
    count: int = status.get("targets", {}).get("copy", {}).get("eventsOut", 0)
    return count


@dataclass(frozen=True)
class Tasks:
    """The two tasks as the test sees them: what their targets hold, their status files, the status the
    driver serves."""

    emulator: Any
    tmp_path: Path
    port: int

    def written(self) -> dict[str, int]:
        cs = self.emulator.connection_string("ns1")
        return {"hubs": target_count(cs), "queues": len(stored(self.emulator, "jobs-copy"))}

    def status(self, name: str) -> dict[str, Any]:
        return read_status(self.tmp_path / f"status-{name}.json")

    def committed(self, name: str) -> int:
        batches: int = self.status(name).get("lastBatchId", -1) + 1
        return batches

    def writing_a_batch(self) -> bool:
        """The Event Hubs task's newest batch is planned in Spark's offset log, not in its commit log, and
        its write tasks have begun: one left its effectively-once intent for the batch."""
        checkpoint = self.tmp_path / "checkpoint-hubs"
        planned = [int(f.name) for f in (checkpoint / "offsets").iterdir() if f.name.isdigit()]
        if not planned or (checkpoint / "commits" / str(max(planned))).exists():
            return False
        intents = Intents(str(checkpoint / "federator"))
        return any((intents.read(p) or {}).get("batchId") == max(planned) for p in "01")

    def served(self, name: str) -> Any:
        return fetch(self.port, task_status_path("default", name))[1]

    def drained(self, sent: dict[str, int]) -> bool:
        """Each task counted every event sent, and the queue's messages were settled at the source."""
        counts = all(self.served(name).get("eventsIn") == total for name, total in sent.items())
        return counts and stored(self.emulator, "jobs") == {}


def wait_mid_batch(driver: Any, log: Path, tasks: Tasks) -> None:
    """Until each task has committed some batches and is writing, and the Event Hubs task is writing a
    batch: Spark planned it and did not commit it, and its write tasks have left their intents."""
    last = dict.fromkeys(("hubs", "queues"), 0)

    def writing() -> bool:
        assert driver.poll() is None, log.read_text()[-3000:]
        now = tasks.written()
        growing = all(now[name] > last[name] for name in now)
        last.update(now)
        return growing and all(tasks.committed(name) >= BATCHES_BEFORE_THE_KILL for name in now)

    wait_until(writing, "both tasks write", 300)
    deadline = time.monotonic() + 120
    while not tasks.writing_a_batch():  # a short window at a low load: looked for without a pause
        assert time.monotonic() < deadline, "no batch of the Event Hubs task seen being written"
        time.sleep(0.002)


def test_a_killed_shared_driver_leaves_each_task_every_event_exactly_once(
    emulator_factory: Any, tmp_path: Path
) -> None:
    emulator = emulator_factory(CONFIG)
    cs = emulator.connection_string("ns1")
    directory, log, tasks = tmp_path / "tasks", tmp_path / "host.log", Tasks(emulator, tmp_path, free_port())
    directory.mkdir()
    task_configs(directory, tmp_path, emulator, tasks.port)
    with producing(cs) as sources:
        driver = start_host(directory, log, "--metrics-port", str(tasks.port))
        try:
            wait_mid_batch(driver, log, tasks)
        finally:
            kill_session(driver)
        at_the_kill = tasks.written()

        driver = start_host(directory, log, "--metrics-port", str(tasks.port))
        try:
            wait_until(
                lambda: all(n > at_the_kill[name] for name, n in tasks.written().items()),
                "both tasks write again",
                300,
            )
            sent = {name: producer.stop() for name, producer in sources.items()}
            wait_until(lambda: tasks.drained(sent), "drained", 300)
            assert states(tasks.port) == [("hubs", "Running"), ("queues", "Running")]
            for name, total in sent.items():
                served = tasks.served(name)
                assert (events_out(served), sum(served["eventsDropped"].values())) == (total, 0), name
        finally:
            kill_session(driver)

    assert_exactly_once(emulator)
    assert target_count(cs) == sent["hubs"]
    copies = Counter(str(m) for m in receive_all(cs, "jobs-copy"))
    assert set(copies) == {f"q{i}" for i in range(sent["queues"])}  # nothing lost
    assert [body for body, count in copies.items() if count > 1] == []  # nothing twice
