"""Benchmark the emulator through the real SDKs; the last line printed is a JSON summary.

    python -m bench.emulator [--events 1000000] [--receive 200000] [--sb-messages 5000]
                             [--topic-messages 5000]

The emulator runs as a separate process (as in local mode), so its RSS is measured alone
and it does not share the GIL with the clients. Targets: EH batch send >= 20k events/s of
100-byte events, EH receive >= 12k/s, RSS < 300 MB holding 1M events. The topic send measures
fan-out by rule: four subscriptions, one of which keeps ``$Default`` beside a rule with an
action (two copies per message, as on Azure).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage

logger = logging.getLogger("bench")
BODY = b"x" * 100
REPLICATION_RULE = {
    "name": "replication",
    "sqlFilter": "replication IS NULL",
    "sqlAction": "SET replication = 1",
}
DEFAULT_RULE = {"name": "$Default"}
CONFIG = {
    "namespaces": [
        {
            "name": "bench",
            "eventHubs": [{"name": "hub", "partitionCount": 2}],
            "queues": [{"name": "q", "lockDurationSeconds": 60}],
            "topics": [
                {
                    "name": "fan",
                    "subscriptions": [
                        {"name": "all"},
                        {"name": "even", "rules": [{"name": "even", "sqlFilter": "n % 2 = 0"}]},
                        {"name": "replication", "rules": [REPLICATION_RULE]},
                        {"name": "replication-and-default", "rules": [DEFAULT_RULE, REPLICATION_RULE]},
                    ],
                }
            ],
        }
    ]
}


def start_emulator(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    config = workdir / "bench.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    ready = workdir / "ready.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "federator_emulator",
            "--config",
            str(config),
            "--ready-file",
            str(ready),
            "--log-level",
            "WARNING",
        ]
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("emulator did not start")
        time.sleep(0.05)
    return process, json.loads(ready.read_text())["namespaces"]["bench"]["connectionString"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (unlike wall time, what other load leaves alone)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_cpu(pid: int, items: int, action: Callable[[], float]) -> tuple[float, float]:
    """``action``'s result, and the CPU time (µs) process ``pid`` spent meanwhile per item of ``items``."""
    before = cpu_seconds(pid)
    result = action()
    return result, (cpu_seconds(pid) - before) / items * 1e6


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def eh_send(cs: str, total: int) -> float:
    """Send ``total`` 100-byte events in batches of 100, alternating partitions; events/s."""
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub") as producer:
        started = time.perf_counter()
        sent = 0
        while sent < total:
            batch = producer.create_batch(partition_id=str((sent // 100) % 2))
            for _ in range(min(100, total - sent)):
                batch.add(EventData(BODY))
            producer.send_batch(batch)
            sent += len(batch)
        return total / (time.perf_counter() - started)


def eh_receive(cs: str, total: int) -> float:
    client = EventHubConsumerClient.from_connection_string(cs, consumer_group="$Default", eventhub_name="hub")
    received = 0
    first: list[float] = []
    done = threading.Event()

    def on_batch(context: Any, events: list[EventData]) -> None:
        nonlocal received
        if events and not first:
            first.append(time.perf_counter())
        received += len(events)
        if received >= total:
            done.set()

    thread = threading.Thread(
        target=client.receive_batch,
        kwargs={
            "on_event_batch": on_batch,
            "partition_id": "0",
            "starting_position": "-1",
            "prefetch": 1000,
            "max_batch_size": 1000,
            "max_wait_time": 1,
        },
    )
    thread.start()
    done.wait(300)
    finished = time.perf_counter()
    client.close()
    thread.join(30)
    return received / (finished - first[0])


def sb_peek_lock(cs: str, total: int) -> float:
    with ServiceBusClient.from_connection_string(cs) as client:
        with client.get_queue_sender("q") as sender:
            for start in range(0, total, 100):
                sender.send_messages([ServiceBusMessage(BODY) for _ in range(min(100, total - start))])
        with client.get_queue_receiver("q", prefetch_count=200) as receiver:
            started = time.perf_counter()
            done = 0
            while done < total:
                for message in receiver.receive_messages(max_message_count=200, max_wait_time=5):
                    receiver.complete_message(message)
                    done += 1
            return total / (time.perf_counter() - started)


def sb_topic_send(cs: str, total: int) -> float:
    """Send ``total`` messages to the fan-out topic in batches of 100; messages/s (fan-out included)."""
    with ServiceBusClient.from_connection_string(cs) as client, client.get_topic_sender("fan") as sender:
        started = time.perf_counter()
        for start in range(0, total, 100):
            count = min(100, total - start)
            sender.send_messages(
                [ServiceBusMessage(BODY, application_properties={"n": start + i}) for i in range(count)]
            )
        return total / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--receive", type=int, default=200_000)
    parser.add_argument("--sb-messages", type=int, default=5_000)
    parser.add_argument("--topic-messages", type=int, default=5_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory() as tmp:
        process, cs = start_emulator(Path(tmp))
        try:
            idle_rss = rss_mb(process.pid)
            send_rate, send_cpu_us = with_cpu(process.pid, args.events, lambda: eh_send(cs, args.events))
            logger.info("EH send: %.0f events/s, emulator CPU %.1f µs each", send_rate, send_cpu_us)
            held_rss = rss_mb(process.pid)
            logger.info("RSS holding %d events: %.0f MB (idle %.0f MB)", args.events, held_rss, idle_rss)
            received = min(args.receive, args.events // 2)
            receive_rate, receive_cpu_us = with_cpu(process.pid, received, lambda: eh_receive(cs, received))
            logger.info("EH receive: %.0f events/s, emulator CPU %.1f µs each", receive_rate, receive_cpu_us)
            sb_rate = sb_peek_lock(cs, args.sb_messages)
            logger.info("SB peek-lock receive+complete: %.0f messages/s", sb_rate)
            topic_rate, topic_cpu_us = with_cpu(
                process.pid, args.topic_messages, lambda: sb_topic_send(cs, args.topic_messages)
            )
            logger.info(
                "SB topic send with fan-out to 4 subscriptions: %.0f messages/s, emulator CPU %.0f µs each",
                topic_rate,
                topic_cpu_us,
            )
        finally:
            process.terminate()
            process.wait(30)
    print(
        json.dumps(
            {
                "eh_send_events_per_s": round(send_rate),
                "eh_send_emulator_cpu_us_per_event": round(send_cpu_us, 1),
                "eh_receive_events_per_s": round(receive_rate),
                "eh_receive_emulator_cpu_us_per_event": round(receive_cpu_us, 1),
                "sb_peek_lock_complete_per_s": round(sb_rate),
                "sb_topic_send_fanout_per_s": round(topic_rate),
                "sb_topic_fanout_emulator_cpu_us_per_message": round(topic_cpu_us),
                "emulator_rss_mb_idle": round(idle_rss),
                "emulator_rss_mb_holding_events": round(held_rss),
                "events_held": args.events,
            }
        )
    )


if __name__ == "__main__":
    main()
