"""What a forced switch away from a task's source leaves behind, as the driver counts it: at any time the
events not handed to a micro-batch yet (the batch in flight has read its events and still writes them),
and, once the source answers again after an outage, exactly the events it held that the task had not
replicated before it came back — checked against an independent count of a real emulator namespace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub._pyamqp.error import AMQPConnectionError
from test_lag import spark_checkpoint

from federator_emulator.testing import EmulatorFactory
from federator_spark.connections import Connection
from federator_spark.lag import Down, LagMonitor, measure, outage, read_offsets

CONFIG = {"namespaces": [{"name": "src", "eventHubs": [{"name": "orders", "partitionCount": 2}]}]}


def tail(last: int, beginning: int = 0) -> dict[str, float | int]:
    return {"last_enqueued_sequence_number": last, "beginning_sequence_number": beginning}


def test_the_batch_in_flight_is_read_already_so_it_is_not_left_behind(tmp_path: Path) -> None:
    # Batch 1 is planned (its end offsets written) and being written: not committed yet.
    spark_checkpoint(tmp_path, [({"0": 4, "1": 2}, True), ({"0": 9, "1": 7}, False)])
    assert read_offsets(tmp_path) == {"0": 9, "1": 7}
    lag = measure({"0": tail(12), "1": tail(7)}, {"0": 4, "1": 2}, {}, 100.0, read_offsets(tmp_path))
    assert (lag["eventsBehind"], lag["eventsUnread"]) == (13, 3)  # committed: 8 + 5; read: 3 + 0
    assert {p: e["readSequence"] for p, e in lag["partitions"].items()} == {"0": 9, "1": 7}


def test_events_retention_removed_are_not_unread() -> None:
    lag = measure({"0": tail(50, beginning=45)}, {"0": 10}, {}, 100.0, {"0": 12})
    assert (lag["eventsBehind"], lag["eventsUnread"]) == (6, 6)  # 45..50 are all the source holds


def test_what_retention_removed_before_it_was_replicated_is_lost_and_a_late_arrival_spoils_the_count() -> (
    None
):
    down = Down(last_seen_up=None, since=90.0, until=95.0, handled={"0": 10, "1": 5}, positions={})
    tails = {
        "0": {**tail(50, beginning=45), "last_enqueued_time": 94.0},  # 11..44 gone, 45..50 still there
        "1": {**tail(8), "last_enqueued_time": 93.0},
    }
    counted = outage(down, tails, up_again=96.0)
    assert (counted["eventsLeftBehind"], counted["eventsExpired"], counted["exact"]) == (6 + 3, 34, True)
    tails["1"]["last_enqueued_time"] = 95.5  # enqueued after the last failed measurement: after the outage
    assert outage(down, tails, up_again=96.0)["exact"] is False


def send(connection: str, partition: str, count: int) -> None:
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="orders") as producer:
        batch = producer.create_batch(partition_id=partition)
        for _ in range(count):
            batch.add(EventData(b"x"))
        producer.send_batch(batch)


def held(connection: str) -> dict[str, int]:
    """Independently of the monitor: each partition's last sequence number, read with the SDK."""
    with EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name="orders"
    ) as client:
        return {p: client.get_partition_properties(p)["last_enqueued_sequence_number"] for p in ("0", "1")}


def test_an_outage_is_counted_exactly_once_the_source_answers_again(
    emulator_factory: EmulatorFactory, tmp_path: Path
) -> None:
    emulator = emulator_factory(CONFIG)
    connection = emulator.connection_string("src")
    send(connection, "0", 10)
    send(connection, "1", 6)
    checkpoint, status = tmp_path / "checkpoint", tmp_path / "federator" / "status.json"
    spark_checkpoint(checkpoint, [({"0": 3, "1": 1}, True), ({"0": 6, "1": 4}, False)])
    source = Connection(connection_string=connection)
    monitor = LagMonitor(source, "orders", "$Default", checkpoint, status)
    try:
        before = monitor.measure_now()
        assert (before["eventsBehind"], before["eventsUnread"]) == (6 + 4, 3 + 1)
        emulator.set_outage("src", True)
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error on a link the outage closed varies
            monitor.measure_now()
        # The batch in flight had read its events before the outage: it completes while it lasts.
        (checkpoint / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":0}\n')
        with pytest.raises(AMQPConnectionError, match="Connection refused"):
            monitor.measure_now()  # the last one that fails: the task's positions are taken here
        emulator.set_outage("src", False)
        after = monitor.measure_now()
    finally:
        monitor.stop()
    counted = held(connection)
    outage = after["lastOutage"]
    assert outage["eventsLeftBehind"] == (counted["0"] - 6) + (counted["1"] - 4) == 3 + 1
    assert (outage["eventsExpired"], outage["exact"]) == (0, True)
    assert outage["lastSeenUp"] == before["measuredAt"]
    assert outage["downSince"] < outage["downUntil"] < outage["upAgain"] == after["measuredAt"]
    # Written with every later measurement, and kept by a driver started again.
    assert json.loads((tmp_path / "federator" / "lag.json").read_text())["lastOutage"] == outage
    again = LagMonitor(source, "orders", "$Default", checkpoint, status)
    try:
        assert again.measure_now()["lastOutage"] == outage
    finally:
        again.stop()
