"""Outages ridden out: the target's, then the source's emulator stops mid-stream (a minute each in the full
tier, ten seconds in CI's) and comes back with its data on the same port. The replication app keeps
running, reports each outage in its status with the broker's words, recovers by itself, and every event
arrives exactly once (effectively-once)."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from azure.eventhub import EventData, EventHubProducerClient
from spark_helpers import prop, read_all, start_app

from federator_contract.appstatus import read_status
from support.connections import write_connection_files
from support.polling import eventually, eventually_more

pytestmark = [
    pytest.mark.slow,
    pytest.mark.jvm,
    pytest.mark.timeout(1200),
    # The test's own producer (the SDK) drops the socket of a connection the outage broke without closing it.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def collect_leaked_sockets() -> Iterator[None]:
    """The sockets the SDK dropped are closed by the garbage collector here, under this module's filter,
    not in whichever later test happens to trigger a collection (a SQL test failed on them)."""
    yield
    gc.collect()


class EmulatorProcess:
    """One namespace's emulator in a process of its own, keeping its data across a stop and a start on
    the same ports."""

    def __init__(self, directory: Path, namespace: str) -> None:
        self.directory = directory
        self.namespace = namespace
        self.config: dict[str, Any] = {
            "namespaces": [{"name": namespace, "eventHubs": [{"name": "orders", "partitionCount": 2}]}]
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.connection_string = ""

    def start(self) -> None:
        config, ready = self.directory / "emulator.yaml", self.directory / "ready.json"
        config.write_text(yaml.safe_dump(self.config))
        ready.unlink(missing_ok=True)
        command = [sys.executable, "-m", "federator_emulator", "--config", str(config)]
        command += ["--data-dir", str(self.directory / "data"), "--ready-file", str(ready)]
        with (self.directory / "emulator.log").open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        eventually(ready.exists, 60, f"emulator {self.namespace} did not start")
        entry = json.loads(ready.read_text())["namespaces"][self.namespace]
        self.connection_string = entry["connectionString"]
        # The next start binds the same ports: clients keep their connection strings.
        self.config["namespaces"][0].update(amqpPort=entry["amqpPort"])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


class Traffic(threading.Thread):
    """About 100 events/s to the source, paused while ``paused`` is set."""

    def __init__(self, connection_string: str) -> None:
        super().__init__(daemon=True)
        self.connection_string = connection_string
        self.paused, self.done = threading.Event(), threading.Event()
        self.sent = 0

    def run(self) -> None:
        with EventHubProducerClient.from_connection_string(
            self.connection_string, eventhub_name="orders"
        ) as producer:
            while not self.done.is_set():
                if not self.paused.is_set():
                    batch = producer.create_batch(partition_id=str(self.sent // 10 % 2))
                    for _ in range(10):
                        batch.add(EventData(f"event {self.sent}"))
                        self.sent += 1
                    producer.send_batch(batch)
                time.sleep(0.1)


@pytest.fixture
def topology(tmp_path: Path) -> Any:
    """West (the source) and east (the target) emulators, the task config, and the traffic; stopped after."""
    west, east = EmulatorProcess(tmp_path / "west", "west"), EmulatorProcess(tmp_path / "east", "east")
    for emulator in (west, east):
        emulator.directory.mkdir()
        emulator.start()
    files = write_connection_files(
        tmp_path / "connections", {"west": west.connection_string, "east": east.connection_string}
    )

    def endpoint(namespace: str) -> dict[str, Any]:
        return {"eventHub": {"connection": {"emulator": {"namespace": namespace}}, "eventHubName": "orders"}}

    config = {
        "kind": "ReplicationTask",
        "metadata": {"name": "orders", "namespace": "default"},
        "spec": {
            "source": endpoint("west"),
            "targets": [{"name": "replica", **endpoint("east")}],
            "delivery": {"effectivelyOnce": True},
            "runtime": {"triggerIntervalSeconds": 0},
        },
        "checkpointLocation": f"file://{tmp_path / 'checkpoint'}",
        "statusFile": str(tmp_path / "status.json"),
        "emulatorConnectionFiles": files,
    }
    (tmp_path / "task.json").write_text(json.dumps(config))
    traffic = Traffic(west.connection_string)
    yield west, east, traffic
    traffic.done.set()
    for emulator in (west, east):
        emulator.stop()


def count(connection_string: str) -> int:
    with EventHubProducerClient.from_connection_string(connection_string, eventhub_name="orders") as client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1 for p in ("0", "1")
        )


# The most an outage may go unreported: the app's retries with their backoff, on a loaded machine.
REPORTED_WITHIN_SECONDS = 90
# Events the target must gain after an outage (two seconds of traffic): the app is seen writing again.
RESUMED_EVENTS = 200


def outage(
    status_file: Path, app: Any, log: Path, stopped: EmulatorProcess, reason: str, seconds: float
) -> None:
    """``stopped`` down for ``seconds``, and longer if the app has not reported ``reason`` by then (its
    retries notice an outage within their own timeouts, later on a loaded machine); the app stays up."""
    stopped.stop()
    outage_ends = time.monotonic() + seconds

    def reported() -> bool:
        return any(o["reason"] == reason for o in read_status(status_file).get("unavailable", []))

    eventually(reported, REPORTED_WITHIN_SECONDS, f"no {reason} in the status during the outage")
    while time.monotonic() < outage_ends:
        assert app.poll() is None, log.read_text()[-3000:]
        time.sleep(1)
    stopped.start()


def resumed(target: EmulatorProcess) -> None:
    """Until the target holds ``RESUMED_EVENTS`` more than now: replication goes on after an outage."""
    message = "replication did not resume after the outage"
    eventually_more(lambda: count(target.connection_string), RESUMED_EVENTS, 120, message)


def test_outages_of_the_target_then_the_source_are_ridden_out_and_every_event_arrives_once(
    tmp_path, topology, in_full_tier
) -> None:
    """One app rides out both outages: a minute each in the full tier, ten seconds in CI's."""
    west, east, traffic = topology
    seconds = 60.0 if in_full_tier else 10.0
    status_file, log = tmp_path / "status.json", tmp_path / "replicate.log"
    app = start_app(tmp_path / "task.json", log)
    try:
        traffic.start()
        eventually(lambda: count(east.connection_string) >= 300, 300, "nothing replicated before the outage")
        outage(status_file, app, log, east, "TargetUnavailable", seconds)
        resumed(east)  # traffic goes on between the outages
        traffic.paused.set()
        outage(status_file, app, log, west, "SourceUnavailable", seconds)
        traffic.paused.clear()
        resumed(east)  # traffic goes on after the outage, read from the source again
        traffic.done.set()
        traffic.join(30)

        total = count(west.connection_string)
        eventually(lambda: count(east.connection_string) >= total, 300, "the target did not catch up")
        eventually(lambda: "unavailable" not in read_status(status_file), 60, "still unavailable")
        assert app.poll() is None, log.read_text()[-3000:]
        app.send_signal(signal.SIGTERM)
        assert app.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()

    copies = Counter(
        prop(e, "repl-source-id")
        for events in read_all(east.connection_string, "orders").values()
        for e in events
    )
    host = west.connection_string.split("sb://")[1].split(";")[0].rstrip("/")
    sent = {
        f"{host}/orders/{p}/{e.sequence_number}"
        for p, events in read_all(west.connection_string, "orders").items()
        for e in events
    }
    assert set(copies) == sent  # nothing lost
    assert [identity for identity, n in copies.items() if n > 1] == []  # nothing twice
    status = read_status(status_file)
    assert status["eventsIn"] == status["targets"]["replica"]["eventsOut"] == len(sent)
    assert "Traceback" not in log.read_text()
