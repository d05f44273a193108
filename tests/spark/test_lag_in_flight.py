"""An outage of the source during a batch: the partitions whose part of the batch reached the targets
before the source went down are replicated, though Spark has not committed the batch (it waits for the
partitions still reading). The driver's count of what the outage left behind starts past them, read back
from the targets as a replay would; checked against an independent count of what the source holds and
the target lacks (real emulator, the real source reader and sink writing one partition's part of the
batch; Spark's offset and commit logs written as Spark writes them). Where the writes cannot be read back
(at-least-once delivery has no intents), the count is said to be inexact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark import TaskContext
from spark_helpers import eh_endpoint, prop, read_all, send, task_config
from test_lag import spark_checkpoint

from federator_contract.names import SOURCE_ID_PROPERTY
from federator_contract.taskconfig import TaskConfig
from federator_emulator.testing import EmulatorFactory
from federator_spark import pipeline
from federator_spark.companions import lag_monitor
from federator_spark.events import SCHEMA
from federator_spark.lag import LagMonitor
from federator_spark.pipeline import TaskPlan
from federator_spark.sinks.replication import ReplicationWriter
from federator_spark.sources.eventhubs import EventHubsStreamReader, HubPartition

CONFIG = {
    "namespaces": [
        {"name": "src", "eventHubs": [{"name": "orders", "partitionCount": 2}]},
        {"name": "dst", "eventHubs": [{"name": "copy", "partitionCount": 2}]},
    ]
}
COMMITTED, IN_FLIGHT = {"0": 3, "1": 1}, {"0": 9, "1": 5}  # batch 0 committed, batch 1 planned


class Batch:
    """What a write task asks of Spark's TaskContext: the batch it writes."""

    def __init__(self, batch_id: int) -> None:
        self.batch_id = batch_id

    def getLocalProperty(self, key: str) -> str | None:
        return str(self.batch_id) if key == "streaming.sql.batchId" else None


def planned(tmp_path: Path, emulator: Any, effectively_once: bool) -> TaskPlan:
    """The task, src/orders → dst/copy; its source holds 10 events in partition 0 and 6 in partition 1,
    Spark committed batch 0 and planned batch 1."""
    connection = emulator.connection_string("src")
    send(connection, "orders", [{"body": f"a{n}", "partition": "0"} for n in range(10)])
    send(connection, "orders", [{"body": f"b{n}", "partition": "1"} for n in range(6)])
    spec = {
        "source": eh_endpoint("src", "orders"),
        "targets": [{"name": "copy", **eh_endpoint("dst", "copy")}],
        "delivery": {"effectivelyOnce": effectively_once},
    }
    raw = task_config(tmp_path, emulator, spec, namespaces=("src", "dst"))
    task = pipeline.plan_task(TaskConfig.from_raw(json.loads(json.dumps(raw))))
    spark_checkpoint(task.layout.query_dir, [(COMMITTED, True), (IN_FLIGHT, False)])
    return task


def write_part(task: TaskPlan, partition: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Partition ``partition``'s part of batch 1, read and written by the real source reader and sink."""
    monkeypatch.setattr(TaskContext, "get", classmethod(lambda cls: Batch(1)))
    reader = EventHubsStreamReader(task.source)  # type: ignore[arg-type]
    part = HubPartition(partition, 2, COMMITTED[partition], IN_FLIGHT[partition])
    names = [field.split()[0] for field in SCHEMA.split(", ")]  # a Row's fields, by name
    rows = [dict(zip(names, event.as_row(), strict=True)) for event in reader.read_events(part)]
    ReplicationWriter(task.write).write(iter(rows))


def outage(monitor: LagMonitor, emulator: Any) -> dict[str, Any]:
    """The source goes down and comes back; the outage as the monitor counted it."""
    try:
        monitor.measure_now()
        emulator.set_outage("src", True)
        for _ in range(2):  # the kept link breaks, then a new one is refused: the last one counts
            with pytest.raises(Exception):  # noqa: B017 - the SDK's error varies
                monitor.measure_now()
        emulator.set_outage("src", False)
        counted: dict[str, Any] = monitor.measure_now()["lastOutage"]
        return counted
    finally:
        monitor.stop()


def not_at_the_target(emulator: Any, task: TaskPlan) -> int:
    """Independently of the monitor: the events of the source past the committed positions (up to its
    tails, those of the batch in flight) that the target does not hold, by their `repl-source-id`."""
    source = f"{task.source.connection.host}/orders/"
    copied = {
        prop(e, SOURCE_ID_PROPERTY)
        for events in read_all(emulator.connection_string("dst"), "copy").values()
        for e in events
    }
    held = {p: len(events) - 1 for p, events in read_all(emulator.connection_string("src"), "orders").items()}
    return sum(
        f"{source}{p}/{s}" not in copied
        for p, last in held.items()
        for s in range(COMMITTED[p] + 1, last + 1)
    )


def test_an_outage_during_a_batch_counts_past_the_partitions_it_wrote_before(
    emulator_factory: EmulatorFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator = emulator_factory(CONFIG)
    task = planned(tmp_path, emulator, effectively_once=True)
    write_part(task, "0", monkeypatch)  # partition 1's part waits for the source: nothing of it is sent
    monitor = lag_monitor(task)
    assert monitor is not None
    counted = outage(monitor, emulator)
    assert counted["eventsLeftBehind"] == not_at_the_target(emulator, task) == 5 - 1  # partition 1's
    assert counted["exact"] is True


def test_where_the_writes_cannot_be_read_back_the_count_is_said_to_be_inexact(
    emulator_factory: EmulatorFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator = emulator_factory(CONFIG)
    task = planned(tmp_path, emulator, effectively_once=False)  # at-least-once: no intents
    write_part(task, "0", monkeypatch)
    monitor = lag_monitor(task)
    assert monitor is not None
    counted = outage(monitor, emulator)
    assert counted["eventsLeftBehind"] == (9 - 3) + (5 - 1)  # from the committed positions: at most
    assert counted["exact"] is False
