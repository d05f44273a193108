"""End-to-end latency of the replication task at a steady rate (part of ``bench.replication``).

A producer paced at ``rate`` events/s stamps each event with its send time; the task runs with its
normal trigger; a consumer on the target records receive time - send time. Producer and consumer run
in a child process (``python -m bench.replication_latency SOURCE_CS TARGET_CS ...``), apart from the
Spark driver's GIL. Where the measured batches' time went: Spark's ``durationMs`` phases, and
Federator's own steps from the task's status file (``stepSeconds``, summed over batches by the app).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench.processes import Emulators
from bench.tasks import PARTITIONS, ROOT, body, start_task, task_config
from federator_contract.appstatus import read_status

SEND_TIME = "bench-send-time"


@dataclass(frozen=True)
class Run:
    rate: int  # events/s
    duration: float  # seconds measured
    warmup: float  # seconds of traffic first, not measured
    trigger_seconds: int | None  # None: the task's default


def client(
    source_cs: str, source: str, target_cs: str, target: str, rate: int, duration: float
) -> dict[str, Any]:
    """Pace ``rate`` events/s into the source for ``duration`` s; return the send start (epoch s) and
    each event's [seconds after it, latency ms until received, ms until enqueued at the target]."""
    arrivals: list[tuple[float, float, float]] = []
    lock = threading.Lock()

    def on_batch(_context: Any, events: list[EventData]) -> None:
        now = time.time()
        with lock:
            for event in events:
                sent = (event.properties or {}).get(SEND_TIME.encode())
                if sent is not None:
                    enqueued = event.enqueued_time.timestamp() if event.enqueued_time else now
                    arrivals.append(
                        (float(sent), (now - float(sent)) * 1000, (enqueued - float(sent)) * 1000)
                    )

    # The SDK hands received events over after ``prefetch`` frames or ``socket_timeout`` of silence,
    # and grants new link credit only once all of it is used: a large prefetch and a short timeout
    # keep the consumer's own delay (credit round trips, waiting for silence) small.
    consumer = EventHubConsumerClient.from_connection_string(
        target_cs, "$Default", eventhub_name=target, socket_timeout=0.01
    )
    thread = threading.Thread(
        target=consumer.receive_batch,
        kwargs={"on_event_batch": on_batch, "starting_position": "@latest", "prefetch": 1000},
    )
    thread.start()
    time.sleep(2)  # let every partition's receiver attach before the first event
    per_tick = max(1, round(rate * 0.02))  # one batch every 20 ms, round-robin over the partitions
    sent = 0
    start_time = time.time()
    with EventHubProducerClient.from_connection_string(source_cs, eventhub_name=source) as producer:
        started = time.monotonic()
        while time.monotonic() - started < duration:
            batch = producer.create_batch(partition_id=str(sent // per_tick % PARTITIONS))
            for _ in range(per_tick):
                data = EventData(body(sent))
                data.properties = {SEND_TIME: repr(time.time())}
                batch.add(data)
                sent += 1
            producer.send_batch(batch)
            # Pace against the schedule, not the last send: a slow send does not lower the rate.
            delay = started + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        actual_rate = sent / (time.monotonic() - started)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with lock:
            if len(arrivals) >= sent:
                break
        time.sleep(0.1)
    consumer.close()
    thread.join(30)
    with lock:
        measured = [[round(at - start_time, 3), round(ms, 1), round(enq, 1)] for at, ms, enq in arrivals]
    return {"start": start_time, "sent": sent, "rate": actual_rate, "arrivals": measured}


def measure(
    spark: Any,
    workdir: Path,
    emus: Emulators,
    run: Run,
    source: str,
    target: str,
    *,
    effectively_once: bool = False,
) -> dict[str, Any]:
    """Latency of the events sent after ``run.warmup`` seconds of traffic at the same rate: until every
    Python worker has opened its receivers and producers (``sources/eventhubs_streams.py``), batches
    pay for opening them."""
    config = task_config(
        workdir, emus, source, target, run.trigger_seconds, effectively_once=effectively_once
    )
    assert config.status_file is not None
    query = start_task(spark, config, available_now=False)
    try:
        while query.lastProgress is None:  # the first (empty) trigger ran: the query is warm
            if query.exception() is not None:
                raise RuntimeError(f"the Spark task failed: {query.exception()}")
            time.sleep(0.1)
        command = [sys.executable, "-m", "bench.replication_latency", emus.cs(source), source]
        command += [
            emus.cs(target),
            target,
            "--rate",
            str(run.rate),
            "--duration",
            str(run.warmup + run.duration),
        ]
        steps = StepCounter(config.status_file)
        timeout = run.warmup + run.duration + 120
        with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as process:
            time.sleep(run.warmup)
            steps.mark()  # the measured window starts
            output, _ = process.communicate(timeout=timeout)
        if process.returncode:
            raise RuntimeError(f"the latency client failed ({process.returncode})")
        federator_steps = steps.per_batch()
        result = json.loads(output.strip().splitlines()[-1])
        if query.exception() is not None:
            raise RuntimeError(f"the Spark task failed: {query.exception()}")
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    measured_from = result["start"] + run.warmup
    phases = phases_p50([p for p in progress if epoch(p["timestamp"]) >= measured_from])
    latencies = sorted(ms for at, ms, _ in result["arrivals"] if at >= run.warmup)
    to_target = sorted(enqueued for at, _, enqueued in result["arrivals"] if at >= run.warmup)
    during_warmup = sorted(ms for at, ms, _ in result["arrivals"] if at < run.warmup)
    return {
        "sent": result["sent"],
        "received": len(result["arrivals"]),
        "rate": round(result["rate"]),
        "measured_events": len(latencies),
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "max_ms": latencies[-1] if latencies else None,
        # Send → enqueued at the target: the replication alone, without the consumer's own delay.
        "enqueued_p50_ms": percentile(to_target, 0.50),
        "enqueued_p99_ms": percentile(to_target, 0.99),
        "warmup_s": run.warmup,
        "trigger_s": run.trigger_seconds,  # None: the task's default
        "warmup_p99_ms": percentile(during_warmup, 0.99),
        "batch_ms_p50": phases,  # the Spark phases of measured batches that moved events
        "federator_ms_per_batch": federator_steps,
    }


class StepCounter:
    """Federator's steps over the measured window: the difference of the status file's sums."""

    def __init__(self, status_file: str) -> None:
        self.status_file = status_file
        self.start: dict[str, Any] = {}

    def _read(self) -> dict[str, Any]:
        return read_status(self.status_file)

    def mark(self) -> None:
        self.start = self._read()

    def per_batch(self) -> dict[str, float]:
        end = self._read()
        batches = end.get("stepBatches", 0) - self.start.get("stepBatches", 0)
        if batches <= 0:
            return {}
        before = self.start.get("stepSeconds", {})
        return {
            name: round((seconds - before.get(name, 0.0)) * 1000 / batches, 1)
            for name, seconds in sorted(end.get("stepSeconds", {}).items())
        } | {"batches": batches}


def phases_p50(progress: list[dict[str, Any]]) -> dict[str, float | None]:
    """The median of each of Spark's ``durationMs`` phases over the batches that moved events."""
    busy = [p["durationMs"] for p in progress if p["numInputRows"]]
    return {key: percentile(sorted(d.get(key, 0) for d in busy), 0.5) for key in busy[0]} if busy else {}


def epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description="the latency run's producer and consumer")
    parser.add_argument("source_cs")
    parser.add_argument("source")
    parser.add_argument("target_cs")
    parser.add_argument("target")
    parser.add_argument("--rate", type=int, required=True)
    parser.add_argument("--duration", type=float, required=True)
    args = parser.parse_args()
    print(
        json.dumps(client(args.source_cs, args.source, args.target_cs, args.target, args.rate, args.duration))
    )


if __name__ == "__main__":
    main()
