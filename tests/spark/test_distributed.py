"""Distribution-correct: the replication app on Spark's ``local-cluster[2,1,1024]`` master, where the
executors are JVMs of their own with their own Python workers, apart from the driver. Nothing may rely on
the driver and the executors sharing a process: positions, intents, commit records and the Service Bus
spool travel through the checkpoint only. An effectively-once Event Hubs task crashed mid-batch and a
Service Bus source each deliver every event once; the executors' log lines (a replay's decision) reach
their logs."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from spark_helpers import eh_endpoint, prop, read_all, send, start_app, task_config

from federator_contract.appstatus import read_status
from federator_spark.failpoints import VARIABLE

pytestmark = [pytest.mark.slow, pytest.mark.jvm, pytest.mark.timeout(1500)]

MASTER = "local-cluster[2,1,1024]"


def spark_home(tmp_path: Path) -> Path:
    """A Spark home of the test's own: PySpark's, linked, with its own ``work/`` (where a local cluster's
    workers keep their executors' logs) so nothing is left inside the installed package."""
    import pyspark

    installed = Path(pyspark.__file__).parent
    home = tmp_path / "spark-home"
    home.mkdir()
    for entry in installed.iterdir():
        if entry.name != "work":
            (home / entry.name).symlink_to(entry)
    return home


def run(config: Path, log: Path, home: Path, *extra: str, env: dict[str, str] | None = None) -> int:
    app = start_app(
        config, log, "--available-now", *extra, master=MASTER, env={"SPARK_HOME": str(home), **(env or {})}
    )
    try:
        return app.wait(timeout=1200)
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()


def executor_logs(home: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in (home / "work").glob("app-*/*/stderr"))


def test_an_effectively_once_event_hubs_task_crashed_mid_batch_delivers_every_event_once(
    emulator_factory, tmp_path
):
    emulator = emulator_factory(
        {
            "namespaces": [
                {
                    "name": "ns1",
                    "eventHubs": [{"name": "src", "partitionCount": 4}, {"name": "dst", "partitionCount": 4}],
                }
            ]
        }
    )
    cs = emulator.connection_string("ns1")
    send(cs, "src", [{"body": f"e{i}", "partition": str(i % 4)} for i in range(800)])
    spec = {
        "source": eh_endpoint("ns1", "src"),
        "targets": [{"name": "dst", **eh_endpoint("ns1", "dst")}],
        "delivery": {"effectivelyOnce": True},
        "runtime": {"maxEventsPerTrigger": 200},
    }
    config, log, home = tmp_path / "task.json", tmp_path / "replicate.log", spark_home(tmp_path)
    config.write_text(json.dumps(task_config(tmp_path, emulator, spec)))

    # Killed once an executor published one source partition of batch 1: the others are not sent yet.
    crashed = run(config, log, home, env={VARIABLE: "partition-published:1"})
    assert crashed == -signal.SIGKILL, log.read_text()[-3000:]
    assert run(config, log, home) == 0, log.read_text()[-3000:]

    copies = Counter(prop(e, "repl-source-id") for events in read_all(cs, "dst").values() for e in events)
    host = cs.split("sb://")[1].split(";")[0].rstrip("/")
    expected = {f"{host}/src/{p}/{s}" for p in "0123" for s in range(200)}
    assert set(copies) == expected and max(copies.values()) == 1
    status = read_status(tmp_path / "status-task.json")
    assert status["eventsIn"] == status["targets"]["dst"]["eventsOut"] == 800
    logs = executor_logs(home)
    assert "is a replay:" in logs  # the replayed batch's decision, logged by an executor
    assert "INFO federator_spark" in logs and "Traceback" not in log.read_text()


def test_a_service_bus_queue_is_replicated_through_the_spool_the_executors_read(emulator_factory, tmp_path):
    emulator = emulator_factory(
        {
            "namespaces": [
                {
                    "name": "ns1",
                    "queues": [{"name": "src", "lockDurationSeconds": 10}],
                    "eventHubs": [{"name": "dst", "partitionCount": 2}],
                }
            ]
        }
    )
    cs = emulator.connection_string("ns1")
    with ServiceBusClient.from_connection_string(cs) as client, client.get_queue_sender("src") as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}", partition_key=f"k{i % 5}") for i in range(300)])
    spec: dict[str, Any] = {
        "source": {
            "serviceBus": {
                "connection": {"emulator": {"namespace": "ns1"}},
                "queueName": "src",
                "maxMessagesPerBatch": 100,
            }
        },
        "targets": [{"name": "dst", **eh_endpoint("ns1", "dst")}],
    }
    config, log, home = tmp_path / "task.json", tmp_path / "replicate.log", spark_home(tmp_path)
    config.write_text(json.dumps(task_config(tmp_path, emulator, spec)))

    assert run(config, log, home) == 0, log.read_text()[-3000:]

    bodies = Counter(e.body_as_str() for events in read_all(cs, "dst").values() for e in events)
    assert bodies == Counter(f"m{i}" for i in range(300))
    with (
        ServiceBusClient.from_connection_string(cs) as client,
        client.get_queue_receiver("src", max_wait_time=2) as receiver,
    ):
        assert receiver.peek_messages(max_message_count=10) == []  # completed at the source
