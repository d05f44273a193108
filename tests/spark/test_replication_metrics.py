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


def test_status_file_accumulates_per_target_counts_lag_and_batch_duration(tmp_path):
    path = str(tmp_path / "status.json")
    now = time.time()
    first = [report(5, {"eu": 2, "unrouted": 1}, now - 2, now - 10, filtered=1, loop_skipped=1), None]
    metrics.record_batch(
        path, task="t", namespace="ns", batch_id=0, reports=first, targets=["eu", "unrouted"]
    )
    second = [report(2, {"eu": 1}, now - 1, now - 4, rejected_dropped=1)]
    status = metrics.record_batch(path, task="t", namespace="ns", batch_id=1, reports=second, targets=["eu"])

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
    metrics.record_batch(
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
