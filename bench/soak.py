"""Bounded state, flat cost: one effectively-once task runs a fixed number of micro-batches under steady
traffic, and the files under its checkpoint and the batch durations are compared between the first and
the last tenth of the run.

    .venv/bin/python -m bench.soak [--batches 2000] [--rate 200]

A producer (a child process) paces ``--rate`` events/s into a 4-partition hub on the emulator; the task
(the real ``federator-replication`` query, ``triggerIntervalSeconds: 0``, effectively-once) copies them
to a second hub, one batch after the other. Spark's own listener reports every batch. Both figures must
stay flat however long it runs: the file count (Spark keeps ``minBatchesToRetain`` batches of its logs,
Federator as many commit records; its intents are one file per partition) and the batch duration (no
step of a batch may read something that grows). The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubProducerClient

from bench.processes import emulators, load
from bench.replication import spark_session
from bench.tasks import PARTITIONS, ROOT, body, start_task, task_config

logger = logging.getLogger("bench")


def produce(connection_string: str, hub: str, rate: float) -> None:
    """Child process: pace ``rate`` events/s into ``hub`` until killed, round-robin over partitions."""
    per_tick = max(1, round(rate * 0.05))
    sent = 0
    with EventHubProducerClient.from_connection_string(connection_string, eventhub_name=hub) as producer:
        started = time.monotonic()
        while True:
            batch = producer.create_batch(partition_id=str(sent // per_tick % PARTITIONS))
            for _ in range(per_tick):
                batch.add(EventData(body(sent)))
                sent += 1
            producer.send_batch(batch)
            delay = started + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def file_count(directory: Path) -> dict[str, int]:
    """Files under the checkpoint: all of them, and Federator's own (``federator/``)."""
    total = federator = 0
    for root, _dirs, files in os.walk(directory):
        total += len(files)
        if Path(root).relative_to(directory).parts[:1] == ("federator",):
            federator += len(files)
    return {"total": total, "federator": federator}


class Batches:
    """Every batch's progress, as Spark's listener reports it (recentProgress keeps only the last 100)."""

    def __init__(self, spark: Any, checkpoint: Path, total: int) -> None:
        from pyspark.sql.streaming.listener import StreamingQueryListener

        self.durations: dict[int, float] = {}
        self.rows: dict[int, int] = {}
        self.files: dict[int, dict[str, int]] = {}  # batch id → file count seen when it was reported
        self.done = threading.Event()
        batches = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                progress = event.progress
                if progress.numInputRows:  # a batch that moved events (slices: one row per partition)
                    batch_id = progress.batchId
                    batches.durations[batch_id] = progress.durationMs.get("triggerExecution", 0)
                    batches.rows[batch_id] = progress.numInputRows
                    if batch_id % max(1, total // 10) == 0:
                        batches.files[batch_id] = file_count(checkpoint)
                    if len(batches.durations) >= total:
                        batches.done.set()

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                batches.done.set()

        spark.streams.addListener(Listener())


def tenth(durations: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(durations), 1),
        "mean_ms": round(statistics.fmean(durations), 1),
        "p90_ms": round(sorted(durations)[int(0.9 * (len(durations) - 1))], 1),
    }


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    groups = [{"soak": ["soak-in", "soak-out"]}]
    with emulators(workdir, groups, PARTITIONS) as emus:
        spark = spark_session(None, [])
        config = task_config(workdir, emus, "soak-in", "soak-out", trigger_seconds=0, effectively_once=True)
        checkpoint = Path(config.checkpoint_location.removeprefix("file://"))
        batches = Batches(spark, checkpoint, args.batches)
        producer = subprocess.Popen(
            [sys.executable, "-m", "bench.soak", "--produce", emus.cs("soak-in"), "--rate", str(args.rate)],
            cwd=ROOT,
        )
        loads = [load()]
        started = time.perf_counter()
        query = start_task(spark, config, available_now=False)
        try:
            while not batches.done.wait(30):
                if query.exception() is not None:
                    raise RuntimeError(f"the Spark task failed: {query.exception()}")
                logger.info("%d batches (load %s)", len(batches.durations), load())
                loads.append(load())
        finally:
            producer.terminate()
            producer.wait(30)
            query.stop()
        elapsed = time.perf_counter() - started
        end_files = file_count(checkpoint)
        spark.stop()
    ids = sorted(batches.durations)[: args.batches]
    size = max(1, len(ids) // 10)
    first, last = ids[:size], ids[-size:]
    first_tenth = tenth([batches.durations[b] for b in first])
    last_tenth = tenth([batches.durations[b] for b in last])
    files = [batches.files[b] for b in sorted(batches.files)]
    return {
        "batches": len(ids),
        "seconds": round(elapsed),
        "rate": args.rate,
        # Spark's input rows: with slices one per source partition a batch reads, not one per event.
        "input_rows_per_batch_mean": round(statistics.fmean(batches.rows[b] for b in ids), 1),
        "files_under_checkpoint": {
            "after_first_tenth": files[1] if len(files) > 1 else None,
            "end": end_files,
        },
        "files_each_tenth": [f["total"] for f in files],
        "batch_first_tenth": first_tenth,
        "batch_last_tenth": last_tenth,
        "last_over_first_p50": round(last_tenth["p50_ms"] / first_tenth["p50_ms"], 2),
        "load_average": loads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=2000, help="micro-batches to run")
    parser.add_argument("--rate", type=float, default=200, help="events/s the producer sends")
    parser.add_argument("--produce", metavar="CONNECTION_STRING", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.produce:
        produce(args.produce, "soak-in", args.rate)
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="federator-soak-") as tmp:
        summary = run(args, Path(tmp))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
