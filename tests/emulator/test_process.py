"""The emulator as a process: ready file, clean SIGTERM, and durability across SIGKILL."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from azure.eventhub import EventData, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

pytestmark = pytest.mark.timeout(90)

CONFIG = {
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "hub1", "partitionCount": 1}],
            "queues": [{"name": "q1"}],
        },
        {"name": "ns2", "keys": [{"name": "app", "key": "app-key"}], "queues": [{"name": "other"}]},
    ]
}


class EmulatorProcess:
    def __init__(self, tmp_path: Path, data_dir: Path | None) -> None:
        self.config_path = tmp_path / "emulator.yaml"
        self.config_path.write_text(yaml.safe_dump(CONFIG))
        self.ready_file = tmp_path / "ready.json"
        self.ready_file.unlink(missing_ok=True)
        command = [sys.executable, "-m", "federator_emulator", "--config", str(self.config_path)]
        command += ["--ready-file", str(self.ready_file), "--log-level", "WARNING"]
        if data_dir is not None:
            command += ["--data-dir", str(data_dir)]
        self.process = subprocess.Popen(command)

    def ready(self, timeout: float = 20.0) -> dict:
        # The ready file is the only signal a separate process gives; poll it, bounded.
        waiter = threading.Event()
        for _ in range(int(timeout / 0.05)):
            if self.ready_file.exists():
                return json.loads(self.ready_file.read_text())
            assert self.process.poll() is None, "emulator exited before it was ready"
            waiter.wait(0.05)
        raise AssertionError("emulator did not write its ready file")

    def connection_string(self, namespace: str = "ns1") -> str:
        return self.ready()["namespaces"][namespace]["connectionString"]

    def stop(self, sig: int) -> int:
        self.process.send_signal(sig)
        return self.process.wait(15)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator:
    processes: list[EmulatorProcess] = []

    def start(data_dir: Path | None = None) -> EmulatorProcess:
        process = EmulatorProcess(tmp_path, data_dir)
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.process.poll() is None:
            process.process.kill()
            process.process.wait(15)


def test_ready_file_describes_every_namespace_and_sigterm_stops_cleanly(spawn):
    emulator = spawn()
    ready = emulator.ready()
    assert set(ready["namespaces"]) == {"ns1", "ns2"}
    ns1, ns2 = ready["namespaces"]["ns1"], ready["namespaces"]["ns2"]
    assert ns1["amqpPort"] != ns2["amqpPort"]
    assert ns2["connectionStrings"] == {"app": ns2["connectionString"]}
    assert f"Endpoint=sb://localhost:{ns2['amqpPort']}" in ns2["connectionString"]
    assert "SharedAccessKeyName=app;SharedAccessKey=app-key" in ns2["connectionString"]
    assert ns2["connectionString"].endswith("UseDevelopmentEmulator=true")
    client = ServiceBusClient.from_connection_string(ns2["connectionString"])
    with client, client.get_queue_sender("other") as sender:
        sender.send_messages(ServiceBusMessage("works"))
    assert emulator.stop(signal.SIGTERM) == 0


def test_acknowledged_data_survives_sigkill_and_numbering_continues(spawn, tmp_path):
    data_dir = tmp_path / "data"
    first = spawn(data_dir)
    cs = first.connection_string()
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        batch = producer.create_batch()
        for body in ("e0", "e1", "e2"):
            batch.add(EventData(body))
        producer.send_batch(batch)
    with ServiceBusClient.from_connection_string(cs) as client:
        with client.get_queue_sender("q1") as sender:
            sender.send_messages([ServiceBusMessage("m1"), ServiceBusMessage("m2"), ServiceBusMessage("m3")])
        with client.get_queue_receiver("q1") as receiver:
            completed, dead = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            receiver.complete_message(completed)
            receiver.dead_letter_message(dead, reason="bad", error_description="kept across restarts")
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL

    second = spawn(data_dir)
    cs = second.connection_string()
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        before = producer.get_partition_properties("0")
        producer.send_event(EventData("e3"))
        after = producer.get_partition_properties("0")
    assert before["last_enqueued_sequence_number"] == 2
    assert after["last_enqueued_sequence_number"] == 3
    with ServiceBusClient.from_connection_string(cs) as client:
        with client.get_queue_sender("q1") as sender:
            sender.send_messages(ServiceBusMessage("m4"))
        with client.get_queue_receiver("q1") as receiver:
            remaining = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            for message in remaining:
                receiver.complete_message(message)
        with client.get_queue_receiver("q1", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            (dead_letter,) = dlq.peek_messages(max_message_count=5, sequence_number=1)
    assert (str(completed), str(dead)) == ("m1", "m2")
    assert [(str(m), m.sequence_number) for m in remaining] == [("m3", 3), ("m4", 4)]
    assert (str(dead_letter), dead_letter.dead_letter_reason) == ("m2", "bad")
    assert second.stop(signal.SIGTERM) == 0


def test_run_forever_reports_a_bad_config_and_a_taken_port(tmp_path):
    from federator_emulator.server import run_forever

    missing = tmp_path / "missing.yaml"
    assert run_forever(missing, None, None) == 2
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(yaml.safe_dump({"namespaces": [{"name": "ns", "queues": [{"name": "q", "nope": 1}]}]}))
    assert run_forever(invalid, None, None) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "taken.yaml"
        config.write_text(yaml.safe_dump({"namespaces": [{"name": "ns", "amqpPort": port}]}))
        assert run_forever(config, None, tmp_path / "ready.json") == 1
    assert not (tmp_path / "ready.json").exists()
