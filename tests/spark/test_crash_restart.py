"""Crash and restart: the replication app (`replicate.py` in its own process group) is killed with
SIGKILL mid-stream, or at each step of its write protocol (`federator_spark.failpoints`), restarted from
its checkpoint, and the target is counted for loss and duplicates; the status file's counts must still
add up (every event read is written or dropped for a stated reason, and counted once)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventHubProducerClient
from spark_helpers import eh_endpoint, prop, read_all, send, start_app, task_config

from federator_contract.appstatus import read_status
from federator_spark.failpoints import POINTS, VARIABLE

pytestmark = [pytest.mark.slow, pytest.mark.jvm, pytest.mark.timeout(1200)]

CONFIG = {
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "src", "partitionCount": 2}, {"name": "dst", "partitionCount": 2}],
        }
    ]
}
EVENTS = 400
# Twenty batches: a kill once the target holds a quarter or a half lands mid-stream however fast batches
# run (with four, one poll of the target could miss the rest of the stream).
PER_TRIGGER = 20
# A crash at a step needs no polling: the walk crashes in batches 1 to 4 of eight, so the stream goes on
# after the last crash.
PER_TRIGGER_AT_A_STEP = 50


def target_count(cs: str) -> int:
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="dst") as client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1 for p in ("0", "1")
        )


def prepare(emulator: Any, tmp_path: Path, effectively_once: bool, per_trigger: int = PER_TRIGGER) -> Path:
    """Load the source and write the task config; returns its path."""
    cs = emulator.connection_string("ns1")
    send(cs, "src", [{"body": f"e{i}", "key": f"k{i % 7}"} for i in range(EVENTS)])
    spec = {
        "source": eh_endpoint("ns1", "src"),
        "targets": [{"name": "dst", **eh_endpoint("ns1", "dst")}],
        "delivery": {"effectivelyOnce": effectively_once},
        "runtime": {"maxEventsPerTrigger": per_trigger, "triggerIntervalSeconds": 0},
    }
    config_path = tmp_path / "task.json"
    config_path.write_text(json.dumps(task_config(tmp_path, emulator, spec)))
    return config_path


def kill_after(emulator: Any, config_path: Path, log: Path, written: int) -> None:
    """Run the app until the target holds at least ``written`` events, then SIGKILL its process group."""
    cs = emulator.connection_string("ns1")
    app = start_app(config_path, log)
    try:
        deadline = time.monotonic() + 300
        while target_count(cs) < written:
            assert app.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no progress before the crash"
            time.sleep(0.1)
    finally:
        os.killpg(app.pid, signal.SIGKILL)  # the driver, its JVM and everything in its session
        app.wait()
    assert target_count(cs) < EVENTS, "the crash came after the end of the stream"


def finish(config_path: Path, log: Path) -> None:
    restarted = start_app(config_path, log, "--available-now")
    try:
        assert restarted.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        if restarted.poll() is None:
            os.killpg(restarted.pid, signal.SIGKILL)
            restarted.wait()


def copies(emulator: Any) -> Counter[str]:
    cs = emulator.connection_string("ns1")
    return Counter(prop(e, "repl-source-id") for events in read_all(cs, "dst").values() for e in events)


def source_ids(emulator: Any) -> set[str]:
    cs = emulator.connection_string("ns1")
    host = cs.split("sb://")[1].split(";")[0].rstrip("/")
    return {
        f"{host}/src/{p}/{e.sequence_number}" for p, events in read_all(cs, "src").items() for e in events
    }


def assert_exactly_once(emulator: Any) -> None:
    found = copies(emulator)
    assert set(found) == source_ids(emulator)  # nothing lost
    assert [identity for identity, count in found.items() if count > 1] == []  # nothing twice


def assert_counted_once(tmp_path: Path) -> None:
    status = read_status(tmp_path / "status-task.json")
    written = status["targets"]["dst"]["eventsOut"]
    assert status["eventsIn"] == written + sum(status["eventsDropped"].values())
    assert (status["eventsIn"], written) == (EVENTS, EVENTS)


@pytest.mark.full(
    why="three app starts (45-60 s); CI crashes the same app at every step of its write protocol (below) "
    "and SIGKILLs a shared driver mid-batch from outside (test_shared_driver_crash.py), exactly once both"
)
def test_effectively_once_target_holds_every_event_exactly_once_after_kills(emulator_factory, tmp_path):
    emulator = emulator_factory(CONFIG)
    config_path, log = prepare(emulator, tmp_path, effectively_once=True), tmp_path / "replicate.log"

    kill_after(emulator, config_path, log, EVENTS // 4)
    kill_after(emulator, config_path, log, EVENTS // 2)
    finish(config_path, log)

    assert_exactly_once(emulator)
    assert_counted_once(tmp_path)


def crash_at(config_path: Path, log: Path, point: str, batch: int) -> None:
    """Run the app until it kills itself at ``point`` of ``batch`` (a replay of it counts)."""
    crashing = start_app(config_path, log, "--available-now", env={VARIABLE: f"{point}:{batch}"})
    try:
        assert crashing.wait(timeout=300) == -signal.SIGKILL, (point, batch, log.read_text()[-3000:])
    finally:
        if crashing.poll() is None:
            os.killpg(crashing.pid, signal.SIGKILL)
            crashing.wait()


def test_a_crash_at_each_step_of_the_write_protocol_loses_and_repeats_nothing(emulator_factory, tmp_path):
    """One run of restarts walks the protocol: each start recovers from the last crash, then crashes at
    the next step, in the next batch; the last start finishes the stream."""
    emulator = emulator_factory(CONFIG)
    config_path = prepare(emulator, tmp_path, effectively_once=True, per_trigger=PER_TRIGGER_AT_A_STEP)
    log = tmp_path / "replicate.log"
    for batch, point in enumerate(POINTS, start=1):
        crash_at(config_path, log, point, batch)

    finish(config_path, log)

    assert_exactly_once(emulator)
    assert_counted_once(tmp_path)
    # The replays, decided and logged by an executor: of batch 1 after the crash once its intent was
    # written, of batch 2 after one of its partitions was published.
    for batch in (1, 2):
        assert re.search(rf"batch {batch} partition \S+ is a replay:", log.read_text()), batch


def test_at_least_once_loses_nothing_and_duplicates_at_most_one_batch(emulator_factory, tmp_path):
    emulator = emulator_factory(CONFIG)
    config_path, log = prepare(emulator, tmp_path, effectively_once=False), tmp_path / "replicate.log"

    kill_after(emulator, config_path, log, EVENTS // 4)
    finish(config_path, log)

    found = copies(emulator)
    assert set(found) == source_ids(emulator)
    assert sum(count - 1 for count in found.values()) <= PER_TRIGGER
