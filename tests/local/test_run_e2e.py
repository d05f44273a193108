"""`federator run` and `federator demo` end to end, as a user runs them: the CLI in a subprocess, the
emulator and Spark started by it, events sent and counted with the real SDK, then SIGINT — and afterwards
no process of the run may be left."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient

from support.polling import eventually

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc"),
]

ROOT = Path(__file__).resolve().parents[2]
FEDERATOR = Path(sys.executable).parent / "federator"
EXAMPLE = ROOT / "examples" / "eh-replication.yaml"
SPARK_START = 240  # a Spark JVM on a busy 2-core machine
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


def federator(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [str(FEDERATOR), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so that a failing test can still kill everything
            env={k: v for k, v in os.environ.items() if not k.startswith("FEDERATOR_SECRET_")},
        )


def process_tree(root: int) -> dict[int, tuple[str, str]]:
    """Every descendant of ``root``: pid → (start time, so that a reused pid is not mistaken for it;
    command line)."""
    parents: dict[int, list[int]] = {}
    seen: dict[int, tuple[str, str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_text().replace("\0", " ")
            except (FileNotFoundError, ProcessLookupError):
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
            seen[int(entry.name)] = (fields[19], command)
    found: dict[int, tuple[str, str]] = {}
    stack = [root]
    while stack:
        for child in parents.get(stack.pop(), []):
            found[child] = seen[child]
            stack.append(child)
    return found


def survivors(tree: dict[int, tuple[str, str]]) -> list[str]:
    left = []
    for pid, (start, command) in tree.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        if fields[19] == start and fields[0] != "Z":
            left.append(command[:120])
    return left


def commands(tree: dict[int, tuple[str, str]]) -> str:
    return " ".join(command for _, command in tree.values())


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


def stop(run: subprocess.Popen[bytes], log: Path) -> tuple[int, dict[int, tuple[str, str]]]:
    """SIGINT, as Ctrl-C would; returns the exit code and the process tree just before."""
    tree = process_tree(run.pid)
    run.send_signal(signal.SIGINT)
    try:
        return run.wait(timeout=90), tree
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        raise AssertionError(f"the run did not stop on SIGINT:\n{log.read_text()[-3000:]}") from None


def wait_for(text: str, log: Path, run: subprocess.Popen[bytes], timeout: float = SPARK_START) -> None:
    def seen() -> bool:
        assert run.poll() is None, log.read_text()[-3000:]
        return text in log.read_text()

    eventually(seen, timeout, f"{text!r} not in the output:\n{log.read_text()[-3000:]}")


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
        code, tree = stop(run, log)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()

    output = log.read_text()
    assert code == 1, output  # one task could not run
    assert "default/needs-a-secret: Stalled (SecretNotFound)" in output
    assert "FEDERATOR_SECRET_WEU_CONNECTIONSTRING" in output
    assert "default/orders-replication: Reconciling (SparkApplicationStopped)" in output
    # The final table: the task's figures from its status file.
    assert re.search(
        r"orders-replication\s*│\s*Reconciling\s*│\s*SparkApplicationStopped\s*│\s*60\s*│\s*0\s*│", output
    )
    assert "java" in commands(tree) and "federator_emulator" in commands(tree)  # the check below sees them
    assert survivors(tree) == []


def test_demo_replicates_everything_and_says_so(tmp_path: Path) -> None:
    summary_path, log = tmp_path / "summary.json", tmp_path / "demo.log"
    demo = federator("demo", "--duration", "15", "--rate", "20", "--summary-json", str(summary_path), log=log)
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
