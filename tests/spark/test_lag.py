"""Replication lag per source partition and the RPO estimate, as the driver measures them: the source's
tails against Spark's last committed positions and the enqueue times the sink recorded; compared with
a count made independently of the monitor."""

from __future__ import annotations

import json
import time

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from kube_configmaps import CuttableProxy

from federator_spark.connections import Connection
from federator_spark.lag import LagMonitor, committed_offsets, measure
from support.sockets import unclosed_sockets

CONFIG = {"namespaces": [{"name": "src", "eventHubs": [{"name": "orders", "partitionCount": 3}]}]}


def spark_checkpoint(path, batches):
    """Spark's offset log and commit log as it writes them: ``batches`` is a list of (end offsets,
    committed)."""
    (path / "offsets").mkdir(parents=True)
    (path / "commits").mkdir()
    for number, (offsets, committed) in enumerate(batches):
        (path / "offsets" / str(number)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(offsets)}\n')
        if committed:
            (path / "commits" / str(number)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_the_positions_are_those_of_the_last_committed_batch(tmp_path):
    spark_checkpoint(
        tmp_path, [({"0": 4, "1": -1}, True), ({"0": 9, "1": 3}, True), ({"0": 20, "1": 20}, False)]
    )
    assert committed_offsets(tmp_path) == {"0": 9, "1": 3}
    assert committed_offsets(tmp_path / "nothing-yet") is None


def test_seconds_behind_is_the_enqueue_time_span_left_to_replicate():
    tails = {
        "0": {
            "last_enqueued_sequence_number": 9,
            "beginning_sequence_number": 0,
            "last_enqueued_time": 1000.0,
        },
        "1": {
            "last_enqueued_sequence_number": 30,
            "beginning_sequence_number": 0,
            "last_enqueued_time": 1100.0,
        },
        "2": {
            "last_enqueued_sequence_number": 50,
            "beginning_sequence_number": 45,
            "last_enqueued_time": 900.0,
        },
    }
    handled = {"0": 9, "1": 20, "2": 10}  # partition 2: events 11..44 expired before they were replicated
    positions = {
        "0": {"sequence": 9, "enqueuedEpoch": 1000.0},
        "1": {"sequence": 20, "enqueuedEpoch": 1058.5},
    }
    lag = measure(tails, handled, positions, 1200.0)
    assert {p: (e["eventsBehind"], e["secondsBehind"]) for p, e in lag["partitions"].items()} == {
        "0": (0, 0.0),
        "1": (10, 41.5),
        "2": (6, None),  # behind, but when the last replicated event was enqueued is unknown
    }
    assert (lag["eventsBehind"], lag["secondsBehind"], lag["rpoSeconds"]) == (16, None, None)
    lag = measure({p: tails[p] for p in ("0", "1")}, handled, positions, 1200.0)
    assert (lag["eventsBehind"], lag["rpoSeconds"], lag["worstPartition"]) == (10, 41.5, "1")


def test_the_monitor_matches_an_independent_count(emulator_factory, tmp_path):
    emulator = emulator_factory(CONFIG)
    connection = emulator.connection_string("src")
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="orders") as producer:
        for partition, count in (("0", 8), ("1", 5), ("2", 3)):
            for _ in range(count):
                batch = producer.create_batch(partition_id=partition)
                batch.add(EventData(b"x"))
                producer.send_batch(batch)
                time.sleep(0.01)
    # Independently: what each partition holds, read with the SDK.
    with EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name="orders"
    ) as client:
        tails = {p: client.get_partition_properties(p) for p in ("0", "1", "2")}
    # The task replicated partition 0 up to sequence 5, partition 1 entirely, partition 2 not at all.
    spark_checkpoint(tmp_path / "checkpoint", [({"0": 5, "1": 4, "2": -1}, True)])
    status = tmp_path / "federator" / "status.json"
    status.parent.mkdir()
    enqueued_5 = tails["0"]["last_enqueued_time_utc"].timestamp() - 0.02  # recorded by the sink
    status.write_text(json.dumps({"partitions": {"0": {"sequence": 5, "enqueuedEpoch": enqueued_5}}}))

    monitor = LagMonitor(
        Connection(connection_string=connection), "orders", "$Default", tmp_path / "checkpoint", status
    )
    try:
        lag = monitor.measure_now()
    finally:
        monitor.stop()
    assert json.loads((tmp_path / "federator" / "lag.json").read_text()) == lag
    behind = {p: tails[p]["last_enqueued_sequence_number"] - h for p, h in {"0": 5, "1": 4, "2": -1}.items()}
    assert behind == {"0": 2, "1": 0, "2": 3}
    assert {p: e["eventsBehind"] for p, e in lag["partitions"].items()} == behind
    assert lag["eventsBehind"] == 5
    assert abs(lag["partitions"]["0"]["secondsBehind"] - 0.02) < 1e-3
    assert lag["partitions"]["1"]["secondsBehind"] == 0.0
    assert lag["partitions"]["2"]["secondsBehind"] is None and lag["rpoSeconds"] is None


def test_a_monitor_whose_connection_broke_closes_its_socket_and_reconnects_at_its_next_poll(
    emulator_factory, tmp_path
):
    """Once a read or write on a connection has failed, the SDK closes it without closing its socket;
    the monitor closes the socket itself, when a read fails and when it stops. A failed read is not
    asked again through the SDK (a connection of its own, retried with backoff): the next poll opens a
    new link, and during an outage a poll fails at once."""
    emulator = emulator_factory(CONFIG)
    direct = emulator.connection_string("src")
    port = int(direct.split(";")[0].rsplit(":", 1)[1])
    proxy = CuttableProxy(port)  # the network between the driver and the namespace, which can break
    connection = Connection(connection_string=direct.replace(f":{port};", f":{proxy.port};"))
    status = tmp_path / "federator" / "status.json"
    monitor = LagMonitor(connection, "orders", "$Default", tmp_path / "checkpoint", status)
    try:
        assert monitor.measure_now()["eventsBehind"] is None  # nothing replicated yet: no position
        proxy.cut()  # drops the monitor's connection
        proxy.restore()
        with pytest.raises(Exception, match="Can not read frame"):  # this poll's figures are lost
            monitor.measure_now()
        assert set(monitor.measure_now()["partitions"]) == {"0", "1", "2"}  # the next poll reconnects
        assert unclosed_sockets() == []
        proxy.cut()  # an outage: connections dropped, new ones hung up on as soon as they are accepted
        for failure in ("Can not read frame", "Failed to initiate the connection"):  # kept link, new one
            started = time.monotonic()
            with pytest.raises(Exception, match=failure):
                monitor.measure_now()
            assert time.monotonic() - started < 5  # at once: no retries through the SDK (its backoff)
    finally:
        monitor.stop()
        proxy.close()
    assert unclosed_sockets() == []
