"""`federator run` and `federator demo` end to end, as a user runs them: the CLI in a subprocess, the
emulator and Spark started by it, events sent and counted with the real SDK, then SIGINT — and afterwards
no process of the run may be left."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from run_helpers import commands, federator, stop, survivors, wait_for

from support.polling import eventually

pytestmark = [
    pytest.mark.slow,
    pytest.mark.jvm,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc"),
]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "eh-replication.yaml"
# A second task whose connection string is nowhere: it must show Stalled while the example runs.
STALLED = """
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {name: needs-a-secret}
spec:
  source:
    eventHub: {connection: {secretRef: {name: weu}}, eventHubName: orders}
  targets:
    - name: copy
      eventHub: {connection: {emulator: {namespace: secondary}}, eventHubName: copy}
"""


def send(connection_string: str, first: int, count: int) -> None:
    with EventHubProducerClient.from_connection_string(connection_string, eventhub_name="orders") as producer:
        for key in range(5):
            batch = producer.create_batch(partition_key=f"k{key}")
            for i in range(first + key, first + count, 5):
                batch.add(EventData(f"event {i}"))
            producer.send_batch(batch)


def events_in(connection_string: str) -> int:
    with EventHubProducerClient.from_connection_string(connection_string, eventhub_name="orders") as client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1
            for p in client.get_partition_ids()
        )


def replicated(state: Path) -> int:
    """Events written, from the status file the app updates after each batch."""
    status = state / "tasks" / "default" / "orders-replication" / "status.json"
    return int(json.loads(status.read_text())["targets"]["secondary"]["eventsOut"]) if status.exists() else 0


def ready_document(state: Path) -> dict[str, Any]:
    return json.loads((state / "emulator" / "ready.json").read_text())


def test_run_replicates_stalls_what_cannot_run_and_leaves_no_process(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "run.log"
    (tmp_path / "stalled.yaml").write_text(STALLED)
    run = federator(
        "run", "-f", str(EXAMPLE), "-f", str(tmp_path / "stalled.yaml"), "--state-dir", str(state), log=log
    )
    try:
        wait_for("default/orders-replication: Ready (Running)", log, run)
        ready = ready_document(state)
        source = ready["namespaces"]["primary"]["connectionString"]
        target = ready["namespaces"]["secondary"]["connectionString"]
        send(source, 0, 60)
        eventually(lambda: events_in(target) == 60, 120, "the 60 events were not replicated")
        eventually(lambda: replicated(state) == 60, 60, "the batch was not committed")
        task_dir = state / "tasks" / "default" / "orders-replication"
        # Spark's temporary files are the app's own, not /tmp's.
        temporary = {path.name.split("-")[0] for path in (task_dir / "tmp").iterdir()}
        assert {"spark", "blockmgr", "liblz4"} <= temporary
        code, tree = stop(run, log)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()

    output = log.read_text()
    assert code == 1, output  # one task could not run
    assert "default/needs-a-secret: Stalled (SecretNotFound)" in output
    assert "FEDERATOR_SECRET_weu__connectionString" in output
    assert "default/orders-replication: Reconciling (SparkApplicationStopped)" in output
    # The final table: the task's figures from its status file.
    assert re.search(
        r"orders-replication\s*│\s*Reconciling\s*│\s*SparkApplicationStopped\s*│\s*60\s*│\s*0\s*│", output
    )
    assert "java" in commands(tree) and "federator_emulator" in commands(tree)  # the check below sees them
    assert survivors(tree) == []
    app_log = (task_dir / "app.log").read_text()
    assert "[pid " in app_log  # the executors' lines reach the app's log
    assert "Traceback" not in app_log and "Py4JJavaError" not in app_log  # a clean stop is quiet
    config = (task_dir / "task.json").read_text()
    assert "emulatorConnectionFiles" in config and "SharedAccessKey" not in config


def test_demo_replicates_everything_and_says_so(tmp_path: Path) -> None:
    summary_path, log = tmp_path / "summary.json", tmp_path / "demo.log"
    # 400 events in ten seconds: the count at the targets, not the lag over a long run, is what is checked.
    traffic = ["--warmup", "5", "--duration", "5", "--rate", "40"]
    demo = federator("demo", *traffic, "--summary-json", str(summary_path), log=log)
    try:
        code = demo.wait(timeout=280)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    output = log.read_text()

    assert code == 0, output
    summary = json.loads(summary_path.read_text())
    replica, priority = summary["targets"]["replica"], summary["targets"]["priority"]
    assert summary["produced"] >= 200 and summary["sendErrors"] == 0 and summary["lost"] == 0
    assert replica["expected"] == replica["replicated"] == summary["produced"]
    assert (replica["lost"], replica["duplicated"], replica["unexpected"], replica["out_of_order"]) == (
        0,
        0,
        0,
        0,
    )
    assert priority["expected"] == priority["replicated"] > 0 and priority["unexpected"] == 0
    assert 0 <= replica["lag_p50_seconds"] <= replica["lag_p99_seconds"]
    assert "nothing lost" in output
