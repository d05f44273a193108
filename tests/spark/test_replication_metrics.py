"""Metrics: the status file the driver folds each batch into, and the Prometheus endpoint that
serves it under the names the operator scrapes."""

from __future__ import annotations

import json
import time
import urllib.request

from federator_spark import metrics
from federator_spark.sinks.replication import TaskReport


def report(
    events_in: int, out: dict[str, int], started: float, last_enqueued: float, **counts: int
) -> TaskReport:
    return TaskReport(started=started, events_in=events_in, out=out, last_enqueued=last_enqueued, **counts)


def record_batch(path: str, *, batch_id: int, reports: list, targets: list[str], **names: str) -> dict:
    """What the driver's commit does with a batch's reports (its commit record keeps the summary)."""
    summary = metrics.summarize(reports, targets)
    return metrics.fold(path, batch_id=batch_id, summary=summary, **{"task": "t", "namespace": "ns", **names})


def test_status_file_accumulates_per_target_counts_lag_and_batch_duration(tmp_path):
    path = str(tmp_path / "status.json")
    now = time.time()
    first = [report(5, {"eu": 2, "unrouted": 1}, now - 2, now - 10, filtered=1, loop_skipped=1), None]
    record_batch(path, batch_id=0, reports=first, targets=["eu", "unrouted"])
    second = [report(2, {"eu": 1}, now - 1, now - 4, rejected_dropped=1)]
    status = record_batch(path, batch_id=1, reports=second, targets=["eu"])

    assert json.loads((tmp_path / "status.json").read_text()) == status
    assert status["targets"] == {
        "eu": {"eventsOut": 3, "deadLettered": 0},
        "unrouted": {"eventsOut": 1, "deadLettered": 0},
    }
    assert status["eventsIn"] == 7 and status["lastBatchId"] == 1
    # Every event read is either written or dropped for a stated reason.
    assert status["eventsDropped"] == {
        "filtered": 1,
        "unrouted": 0,
        "rejected": 1,
        "undeliverable": 0,
        "loop": 1,
        "following": 0,
    }
    assert 4 <= status["replicationLagSeconds"] < 6
    assert 1 <= status["batchDurationSeconds"] < 3


def test_prometheus_endpoint_serves_the_status_under_the_federator_names(tmp_path):
    path = str(tmp_path / "status.json")
    now = time.time()
    record_batch(
        path,
        task="orders",
        namespace="prod",
        batch_id=0,
        reports=[report(3, {"eu": 2}, now - 1, now - 3, unrouted_dropped=1)],
        targets=["eu"],
    )
    lag = {
        "rpoSeconds": 7.5,
        "partitions": {
            "0": {"eventsBehind": 0, "secondsBehind": 0.0},
            "1": {"eventsBehind": 12, "secondsBehind": 7.5},
        },
    }
    (tmp_path / "lag.json").write_text(json.dumps(lag))
    server = metrics.serve(0, path, "prod", "orders")
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
            text = response.read().decode()
        with urllib.request.urlopen(f"{base}/status", timeout=5) as response:
            status = json.loads(response.read())
    finally:
        server.shutdown()
        server.server_close()

    assert 'federator_events_replicated_total{namespace="prod",target="eu",task="orders"} 2.0' in text
    assert 'federator_events_dead_lettered_total{namespace="prod",target="eu",task="orders"} 0.0' in text
    assert 'federator_events_dropped_total{namespace="prod",reason="unrouted",task="orders"} 1.0' in text
    assert 'federator_replication_latency_seconds{namespace="prod",task="orders"}' in text
    assert 'federator_replication_lag_events{namespace="prod",partition="1",task="orders"} 12.0' in text
    assert 'federator_replication_lag_seconds{namespace="prod",partition="1",task="orders"} 7.5' in text
    assert 'federator_replication_lag_seconds{namespace="prod",partition="0",task="orders"} 0.0' in text
    assert 'federator_failover_rpo_seconds{namespace="prod",task="orders"} 7.5' in text
    # What the operator reads into the task's status: the status file with the lag beside it.
    assert status["targets"] == {"eu": {"eventsOut": 2, "deadLettered": 0}} and status["lag"] == lag
    assert 'federator_batch_duration_seconds{namespace="prod",task="orders"}' in text


def test_a_batch_counted_before_a_crash_is_not_counted_again_and_each_partition_keeps_its_last_event(
    tmp_path,
):
    path = str(tmp_path / "status.json")
    now = time.time()
    first = TaskReport(
        source_partition="0", events_in=3, out={"eu": 3}, handled_sequence=41, handled_enqueued=now - 2
    )
    # The summary travels in the batch's commit record (JSON) and is folded from there after a crash.
    summary = json.loads(json.dumps(metrics.summarize([first], ["eu"])))
    counted = metrics.fold(path, task="t", namespace="ns", batch_id=4, summary=summary, query="/q")
    again = metrics.fold(path, task="t", namespace="ns", batch_id=4, summary=summary, query="/q")
    assert again == counted and counted["eventsIn"] == 3 and counted["targets"]["eu"]["eventsOut"] == 3

    later = [
        TaskReport(source_partition="0", events_in=1, handled_sequence=42, handled_enqueued=now - 1),
        TaskReport(source_partition="1", events_in=1, handled_sequence=7, handled_enqueued=now),
    ]
    status = record_batch(path, batch_id=5, reports=later, targets=["eu"], query="/q")
    assert status["eventsIn"] == 5 and status["stepBatches"] == 2
    assert status["partitions"] == {
        "0": {"sequence": 42, "enqueuedEpoch": now - 1},
        "1": {"sequence": 7, "enqueuedEpoch": now},
    }
