"""Crash and restart: the replication app (`replicate.py` in its own process group) is killed with
SIGKILL mid-stream, restarted from its checkpoint, and the target is counted for loss and duplicates."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventHubProducerClient
from spark_helpers import eh_endpoint, prop, read_all, send, start_app, task_config

pytestmark = pytest.mark.slow

CONFIG = {
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "src", "partitionCount": 2}, {"name": "dst", "partitionCount": 2}],
        }
    ]
}
EVENTS = 400
PER_TRIGGER = 100


def target_count(cs: str) -> int:
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="dst") as client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1 for p in ("0", "1")
        )


def crash_and_restart(emulator: Any, tmp_path: Path, effectively_once: bool) -> Counter[str]:
    cs = emulator.connection_string("ns1")
    send(cs, "src", [{"body": f"e{i}", "key": f"k{i % 7}"} for i in range(EVENTS)])
    spec = {
        "source": eh_endpoint("ns1", "src"),
        "targets": [{"name": "dst", **eh_endpoint("ns1", "dst")}],
        "delivery": {"effectivelyOnce": effectively_once},
        "runtime": {"maxEventsPerTrigger": PER_TRIGGER, "triggerIntervalSeconds": 0},
    }
    config_path = tmp_path / "task.json"
    config_path.write_text(json.dumps(task_config(tmp_path, emulator, spec)))
    log = tmp_path / "replicate.log"

    app = start_app(config_path, log)
    try:
        deadline = time.monotonic() + 120
        while target_count(cs) < EVENTS // 4:
            assert app.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no progress before the crash"
            time.sleep(0.1)
    finally:
        os.killpg(app.pid, signal.SIGKILL)  # the driver, its JVM and everything in its session
        app.wait()
    written_at_crash = target_count(cs)
    assert written_at_crash < EVENTS, "the crash came after the end of the stream"

    restarted = start_app(config_path, log, "--available-now")
    try:
        assert restarted.wait(timeout=180) == 0, log.read_text()[-3000:]
    finally:
        if restarted.poll() is None:
            os.killpg(restarted.pid, signal.SIGKILL)
            restarted.wait()
    return Counter(prop(e, "repl-source-id") for events in read_all(cs, "dst").values() for e in events)


def source_ids(emulator: Any) -> set[str]:
    cs = emulator.connection_string("ns1")
    host = cs.split("sb://")[1].split(";")[0].rstrip("/")
    return {
        f"{host}/src/{p}/{e.sequence_number}" for p, events in read_all(cs, "src").items() for e in events
    }


def test_effectively_once_target_holds_every_event_exactly_once_after_a_kill(emulator_factory, tmp_path):
    emulator = emulator_factory(CONFIG)

    copies = crash_and_restart(emulator, tmp_path, effectively_once=True)

    assert set(copies) == source_ids(emulator)  # nothing lost
    assert [identity for identity, count in copies.items() if count > 1] == []  # nothing twice


def test_at_least_once_loses_nothing_and_duplicates_at_most_one_batch(emulator_factory, tmp_path):
    emulator = emulator_factory(CONFIG)

    copies = crash_and_restart(emulator, tmp_path, effectively_once=False)

    assert set(copies) == source_ids(emulator)
    assert sum(count - 1 for count in copies.values()) <= PER_TRIGGER
