"""The `eventhubs` stream reader: one Spark partition per hub partition, sequence-number offsets,
start positions and read limits."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import send

from federator_spark.connections import Connection
from federator_spark.sources.eventhubs import cap

pytestmark = pytest.mark.slow

CONFIG = {"namespaces": [{"name": "ns1", "eventHubs": [{"name": "src", "partitionCount": 2}]}]}


def read_to_memory(spark: Any, connection_string: str, tmp_path: Path, name: str, **options: str) -> Any:
    query = (
        spark.readStream.format("eventhubs")
        .option("connection", Connection(connection_string=connection_string).to_option())
        .option("eventHubName", "src")
        .options(**options)
        .load()
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / name))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(timeout=90)
    assert query.exception() is None
    return query


def test_reads_every_event_per_partition_in_sequence_order_with_its_metadata(
    spark, emulator_factory, tmp_path
):
    cs = emulator_factory(CONFIG).connection_string("ns1")
    send(cs, "src", [{"body": f"k1-{i}", "key": "k1", "properties": {"n": i}} for i in range(5)])
    send(cs, "src", [{"body": f"p1-{i}", "partition": "1"} for i in range(3)])

    read_to_memory(spark, cs, tmp_path, "all_events")
    rows = spark.sql("SELECT * FROM all_events ORDER BY partition, sequence_number").collect()

    by_partition: dict[str, list[Any]] = {}
    for row in rows:
        by_partition.setdefault(row.partition, []).append(row)
    keyed = [r for r in rows if r.partition_key == "k1"]
    assert [bytes(r.body).decode() for r in keyed] == [f"k1-{i}" for i in range(5)]
    assert [r.properties["n"] for r in keyed] == ["0", "1", "2", "3", "4"]
    assert len({r.partition for r in keyed}) == 1
    for partition_rows in by_partition.values():
        assert [r.sequence_number for r in partition_rows] == list(range(len(partition_rows)))
    assert len(rows) == 8
    assert all(r.partition_count == 2 and r.source.endswith("/src") and r.enqueued_time for r in rows)


def test_max_events_per_trigger_splits_the_backlog_into_bounded_batches(spark, emulator_factory, tmp_path):
    cs = emulator_factory(CONFIG).connection_string("ns1")
    send(cs, "src", [{"body": f"e{i}", "partition": str(i % 2)} for i in range(10)])

    query = read_to_memory(spark, cs, tmp_path, "limited", maxEventsPerTrigger="4")

    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in batches] == [4, 4, 2]
    ends = [json.loads(p["sources"][0]["endOffset"]) for p in batches]
    assert [list(end) for end in ends] == [["0", "1"]] * 3  # stable key order: no empty extra batches
    assert ends[-1] == {"0": 4, "1": 4}
    assert spark.sql("SELECT count(DISTINCT body) FROM limited").first()[0] == 10


def test_latest_skips_the_backlog_and_reads_only_new_events(spark, emulator_factory, tmp_path):
    cs = emulator_factory(CONFIG).connection_string("ns1")
    send(cs, "src", [{"body": "old", "partition": "0"}])
    query = (
        spark.readStream.format("eventhubs")
        .option("connection", Connection(connection_string=cs).to_option())
        .option("eventHubName", "src")
        .option("startPosition", "latest")
        .load()
        .writeStream.format("memory")
        .queryName("latest")
        .option("checkpointLocation", str(tmp_path / "latest"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        deadline = time.monotonic() + 60
        while not query.recentProgress and time.monotonic() < deadline:
            time.sleep(0.1)  # the initial (latest) offsets are taken on the first trigger
        send(cs, "src", [{"body": "new", "partition": "0"}])
        query.processAllAvailable()
    finally:
        query.stop()

    assert [bytes(r.body) for r in spark.table("latest").collect()] == [b"new"]


def test_enqueued_time_start_reads_events_enqueued_at_or_after_it(spark, emulator_factory, tmp_path):
    cs = emulator_factory(CONFIG).connection_string("ns1")
    send(cs, "src", [{"body": "before", "partition": "0"}, {"body": "before", "partition": "1"}])
    time.sleep(0.05)
    start = datetime.now(UTC)
    time.sleep(0.05)
    send(cs, "src", [{"body": "after", "partition": "1"}])

    read_to_memory(
        spark, cs, tmp_path, "by_time", startPosition="enqueuedTime", startEnqueuedTime=start.isoformat()
    )

    assert [bytes(r.body) for r in spark.table("by_time").collect()] == [b"after"]


def test_read_limit_is_shared_fairly_between_partitions():
    assert cap({"0": -1, "1": -1, "2": 9}, {"0": 99, "1": 2, "2": 9}, 10) == {"0": 6, "1": 2, "2": 9}
    assert cap({"0": -1, "1": -1}, {"0": 99, "1": 99}, 1) == {"0": 0, "1": -1}
