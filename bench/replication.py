"""Event Hubs → Event Hubs replication: our Spark app on local[2], at-least-once and effectively-once,
against a plain SDK copy loop.

    .venv/bin/python -m bench.replication [--events 200000] [--duration 45] [--layout per-namespace]

All copy the same pre-loaded source hub (4 partitions, 1 KB events) to their own target hub on the
same emulator, in the same run: first the SDK loop (one process of its own, sync azure-eventhub
``receive_batch`` → ``send_batch``, a receiver thread per partition; the Spark JVM is not started
yet, so it has the machine to itself), then the real ``federator-replication`` query (a task config
as the tests build it, ``availableNow``) on a session warmed by a small task, as a long-running app
would be, at-least-once and effectively-once twice each in mirrored order (A B B A, so neither gains
from going second), then the SDK loop once more (into another hub): the machine's speed drifts by a
third within minutes here, so the baseline is both SDK runs (their total time), bracketing the Spark
runs. Every target is read back: its count must equal the source
count with no duplicate. Then the end-to-end latency at a steady rate, for each mode: a producer paced
at ``--rate`` events/s stamps a send time on each event, the task runs with its normal trigger, a
consumer on the target records receive time - send time (producer and consumer run in their own
process, apart from the driver's GIL); only events sent after ``--warmup`` seconds of that traffic
count. Where a paced batch's time goes is printed for each mode: Spark's own ``durationMs`` phases
(p50) and Federator's steps (means per batch, from the status file: receiving, the intent's tail
reads and fsync, waiting for the targets to accept, reading back, the driver's status and commit
record writes).

The emulator runs in its own process(es): ``--layout one`` (one process for every namespace),
``per-namespace`` (source and target namespaces apart) or ``per-hub``. Goals on 2 cores: both modes
>= 3x the SDK loop, effectively-once >= 90 % of at-least-once, p99 <= 0.5 s at-least-once and <= 0.8 s
effectively-once at 1,000 events/s, one application's peak PSS <= 1,000 MB (the JVM, its Python processes
and this process, the driver's Python side, which leaves pre-loading and the SDK loop to another:
``peak_pss_mb``, with RSS beside and the processes by kind at the peak; see
docs/replication.md, "Memory of one application"). The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench import replication_latency
from bench.processes import (
    Emulators,
    RssSampler,
    cpu_seconds,
    emulators,
    load,
    tree_cpu_seconds,
)
from bench.tasks import EVENT_SIZE, ID_WIDTH, PARTITIONS, ROOT, body, run_available_now, task_config
from federator_spark import spark_settings

logger = logging.getLogger("bench")

# Logical namespaces and their hubs; a layout decides which emulator process serves which.
HUBS = {
    "source": ("events", "warm-in", "lat-in", "lat-in-eo"),
    "target": (
        "sdk-out",
        "sdk-out-after",
        "spark-out",
        "spark-out-2",
        "spark-out-eo",
        "spark-out-eo-2",
        "warm-out",
        "lat-out",
        "lat-out-eo",
    ),
}
# Each mode: its two copy targets, its latency source and target.
MODES = {
    "at_least_once": (("spark-out", "spark-out-2"), "lat-in", "lat-out"),
    "effectively_once": (("spark-out-eo", "spark-out-eo-2"), "lat-in-eo", "lat-out-eo"),
}
WARMUP_EVENTS = 2_000
DRIVER_ENV = "spark.kubernetes.driverEnv."


def groups(layout: str) -> list[dict[str, list[str]]]:
    """Per emulator process: namespace name → its hubs."""
    if layout == "one":
        return [{role: list(hubs) for role, hubs in HUBS.items()}]
    if layout == "per-namespace":
        return [{role: list(hubs)} for role, hubs in HUBS.items()]
    return [{hub: [hub]} for hubs in HUBS.values() for hub in hubs]


# ---------------------------------------------------------------------------------------- events


def preload(cs: str, hub: str, total: int, first: int = 0) -> None:
    """``total`` 1 KB events, spread evenly over the partitions, in full batches."""
    with EventHubProducerClient.from_connection_string(cs, eventhub_name=hub) as producer:
        per_partition = [range(first + p, first + total, PARTITIONS) for p in range(PARTITIONS)]
        for partition, indexes in enumerate(per_partition):
            batch = producer.create_batch(partition_id=str(partition))
            for index in indexes:
                data = EventData(body(index))
                try:
                    batch.add(data)
                except ValueError:
                    producer.send_batch(batch)
                    batch = producer.create_batch(partition_id=str(partition))
                    batch.add(data)
            if len(batch):
                producer.send_batch(batch)


def hub_count(cs: str, hub: str) -> int:
    with EventHubProducerClient.from_connection_string(cs, eventhub_name=hub) as client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1
            for p in client.get_partition_ids()
        )


def identities(cs: str, hub: str, expected: int) -> Counter[bytes]:
    """How often each body identity occurs in the hub (reads every event back)."""
    seen: Counter[bytes] = Counter()
    total = hub_count(cs, hub)
    lock, done = threading.Lock(), threading.Event()

    def on_batch(_context: Any, events: list[EventData]) -> None:
        with lock:
            for event in events:
                seen[event.body_as_str()[:ID_WIDTH].encode()] += 1
            if sum(seen.values()) >= total:
                done.set()

    consumer = EventHubConsumerClient.from_connection_string(cs, "$Default", eventhub_name=hub)
    thread = threading.Thread(
        target=consumer.receive_batch,
        kwargs={
            "on_event_batch": on_batch,
            "starting_position": "-1",
            "max_batch_size": 500,
            "prefetch": 1000,
        },
    )
    thread.start()
    done.wait(60 + expected / 2000)
    consumer.close()
    thread.join(30)
    return seen


def verify(cs: str, hub: str, expected: int) -> dict[str, Any]:
    seen = identities(cs, hub, expected)
    wanted = {b"%0*d" % (ID_WIDTH, i) for i in range(expected)}
    result = {
        "count": sum(seen.values()),
        "distinct": len(seen),
        "duplicates": sum(n - 1 for n in seen.values()),
        "missing": len(wanted - set(seen)),
    }
    result["ok"] = result["count"] == expected and result["duplicates"] == 0 and result["missing"] == 0
    return result


# ---------------------------------------------------------------------------------------- baseline


def sdk_copy(source_cs: str, source: str, target_cs: str, target: str, total: int) -> float:
    """The plain copy loop: a receiver per partition, each on its own thread (1.5x the hub-wide
    ``receive_batch`` here, whose load balancing claims partitions gradually), sending each batch on
    to the same partition of the target through one producer. Seconds until ``total`` were sent."""
    producer = EventHubProducerClient.from_connection_string(target_cs, eventhub_name=target)
    copied = 0
    lock, done = threading.Lock(), threading.Event()

    def on_batch(context: Any, events: list[EventData]) -> None:
        nonlocal copied
        partition = context.partition_id
        batch = producer.create_batch(partition_id=partition)
        for event in events:
            data = EventData(b"".join(event.body))  # type: ignore[arg-type]  # a data body: byte chunks
            data.properties = event.properties
            try:
                batch.add(data)
            except ValueError:
                producer.send_batch(batch)
                batch = producer.create_batch(partition_id=partition)
                batch.add(data)
        if len(batch):
            producer.send_batch(batch)
        with lock:
            copied += len(events)
            if copied >= total:
                done.set()

    started = time.perf_counter()
    consumers, threads = [], []
    for partition in range(PARTITIONS):
        consumer = EventHubConsumerClient.from_connection_string(source_cs, "$Default", eventhub_name=source)
        options = {"partition_id": str(partition), "starting_position": "-1", "max_batch_size": 500}
        thread = threading.Thread(
            target=consumer.receive_batch, kwargs={"on_event_batch": on_batch, "prefetch": 1000, **options}
        )
        thread.start()
        consumers.append(consumer)
        threads.append(thread)
    finished = done.wait(120 + total / 500)
    elapsed = time.perf_counter() - started
    for consumer in consumers:
        consumer.close()
    for thread in threads:
        thread.join(30)
    producer.close()
    if not finished:
        raise RuntimeError(f"SDK copy loop copied {copied} of {total} events")
    return elapsed


def measured_sdk_copy(
    source_cs: str, source: str, target_cs: str, target: str, total: int
) -> tuple[float, float]:
    """``sdk_copy``'s seconds, and the CPU seconds its process spent (every thread)."""
    cpu = time.process_time()
    seconds = sdk_copy(source_cs, source, target_cs, target, total)
    return seconds, time.process_time() - cpu


def sdk_process() -> Executor:
    """A process of its own for the SDK's side of the benchmark (pre-loading, the SDK loop): this process is
    the Spark driver's Python side, whose memory counts in the application's, and a driver never holds the
    receivers, threads and buffers of a copy loop."""
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))


# ---------------------------------------------------------------------------------------- spark


def driver_environment(conf: list[str]) -> dict[str, str]:
    """The environment that ``--conf spark.kubernetes.driverEnv.NAME=VALUE`` settings give a driver pod,
    given here to the JVM the session starts and so to its Python workers (``spark.executorEnv.NAME``
    reaches only the workers): how a variable such as ``MALLOC_ARENA_MAX`` is measured (docs/replication.md,
    "Memory of one application")."""
    settings = (setting.partition("=") for setting in conf)
    return {key.removeprefix(DRIVER_ENV): value for key, _, value in settings if key.startswith(DRIVER_ENV)}


def spark_session(profile_dir: Path | None, conf: list[str]) -> Any:
    """The session ``spark-apps/replicate.py --master local[2]`` builds (plus quiet logs), with extra
    ``KEY=VALUE`` settings to try."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("FEDERATOR_LOG_LEVEL", "WARNING")  # the workers' lines, in the benchmark's output
    if profile_dir is not None:
        # Workers import bench.profiled; they inherit this environment.
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        os.environ["FEDERATOR_BENCH_PROFILE_DIR"] = str(profile_dir)
    from pyspark.sql import SparkSession

    builder = spark_settings.configured(
        SparkSession.builder.appName("federator-bench-replication")
        .master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for setting in conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    os.environ.update(driver_environment(conf))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------------- main


def copy_with_sdk(sdk_side: Executor, emus: Emulators, total: int, target: str) -> dict[str, float]:
    cpu = cpu_seconds(emus.pids)
    seconds, own_cpu = sdk_side.submit(
        measured_sdk_copy, emus.cs("events"), "events", emus.cs(target), target, total
    ).result()
    figures = {
        "rate": total / seconds,
        "seconds": seconds,
        "cpu": own_cpu,
        "emulator_cpu": cpu_seconds(emus.pids) - cpu,
    }
    logger.info("SDK copy loop into %s: %s (load %s)", target, _rounded(figures), load())
    return figures


def copy_with_spark(
    spark: Any, workdir: Path, emus: Emulators, total: int, target: str, effectively_once: bool
) -> dict[str, Any]:
    jvm_pid = spark.sparkContext._gateway.proc.pid
    cpu, own = cpu_seconds(emus.pids), tree_cpu_seconds(jvm_pid) + cpu_seconds([os.getpid()])
    config = task_config(workdir, emus, "events", target, effectively_once=effectively_once)
    seconds, progress = run_available_now(spark, config)
    figures = {
        "rate": total / seconds,
        "seconds": seconds,
        "cpu": tree_cpu_seconds(jvm_pid) + cpu_seconds([os.getpid()]) - own,  # JVM, workers, driver
        "emulator_cpu": cpu_seconds(emus.pids) - cpu,
        "batch_ms": [p["durationMs"].get("triggerExecution") for p in progress if p["numInputRows"]],
    }
    # The query's start (its source's Python process, the first reads) and stop: the run's time outside
    # its batches.
    in_batches = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1e3
    figures["outside_batches_s"] = seconds - in_batches
    mode = "effectively-once" if effectively_once else "at-least-once"
    logger.info("Spark local[2] %s: %s (load %s)", mode, _rounded(figures), load())
    return figures


def mean_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Two runs of one mode as one: total events over total time, CPU per run."""
    seconds = sum(r["seconds"] for r in runs)
    return {
        "rate": sum(r["rate"] * r["seconds"] for r in runs) / seconds,
        "seconds": seconds / len(runs),
        "cpu": sum(r["cpu"] for r in runs) / len(runs),
        "emulator_cpu": sum(r["emulator_cpu"] for r in runs) / len(runs),
        "batch_ms": [ms for r in runs for ms in r["batch_ms"]],
        "outside_batches_s": sum(r["outside_batches_s"] for r in runs) / len(runs),
    }


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()}


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    total = args.events
    loads = {"start": load()}
    with emulators(workdir, groups(args.layout), PARTITIONS) as emus, sdk_process() as sdk_side:
        started = time.perf_counter()
        sdk_side.submit(preload, emus.cs("events"), "events", total).result()
        sdk_side.submit(preload, emus.cs("warm-in"), "warm-in", min(WARMUP_EVENTS, total)).result()
        logger.info("pre-loaded %d events in %.1f s (load %s)", total, time.perf_counter() - started, load())
        before = copy_with_sdk(sdk_side, emus, total, "sdk-out")

        started = time.perf_counter()
        spark = spark_session(args.profile, args.conf)
        with RssSampler(spark.sparkContext._gateway.proc.pid) as rss:
            run_available_now(spark, task_config(workdir, emus, "warm-in", "warm-out"))
            session_start = time.perf_counter() - started
            logger.info("Spark session + warm-up task: %.1f s", session_start)
            # Each mode twice, in mirrored order (A B B A), so neither gains from going second.
            runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
            for mode, copy in (
                ("at_least_once", 0),
                ("effectively_once", 0),
                ("effectively_once", 1),
                ("at_least_once", 1),
            ):
                target = MODES[mode][0][copy]
                runs[mode].append(
                    copy_with_spark(spark, workdir, emus, total, target, mode == "effectively_once")
                )
            ours = {mode: mean_of(pair) for mode, pair in runs.items()}
            after = copy_with_sdk(sdk_side, emus, total, "sdk-out-after")  # the session idles meanwhile
            loads["throughput"] = load()
            latency: dict[str, Any] = {}
            if args.duration > 0:
                for mode, (_, source, target) in MODES.items():
                    latency[mode] = replication_latency.measure(
                        spark,
                        workdir,
                        emus,
                        replication_latency.Run(args.rate, args.duration, args.warmup, args.trigger),
                        source,
                        target,
                        effectively_once=mode == "effectively_once",
                    )
                    logger.info(
                        "latency %s at %.0f events/s: %s (load %s)", mode, args.rate, latency[mode], load()
                    )
            loads["latency"] = load()
        spark.stop()
        sdk_checks = [verify(emus.cs(hub), hub, total) for hub in ("sdk-out", "sdk-out-after")]
        spark_checks = {
            mode: [verify(emus.cs(hub), hub, total) for hub in hubs] for mode, (hubs, _, _) in MODES.items()
        }
        logger.info("read back: SDK %s, Spark %s", sdk_checks, spark_checks)
    sdk = {key: (before[key] + after[key]) / 2 for key in ("seconds", "cpu", "emulator_cpu")}
    sdk["rate"] = total / sdk["seconds"]
    alo, eo = ours["at_least_once"], ours["effectively_once"]
    return {
        "events": total,
        "event_bytes": EVENT_SIZE,
        "partitions": PARTITIONS,
        "layout": args.layout,
        "spark_conf": args.conf,
        "sdk_events_per_s": round(sdk["rate"]),
        "sdk_runs_events_per_s": [round(before["rate"]), round(after["rate"])],
        "spark_events_per_s": {mode: round(figures["rate"]) for mode, figures in ours.items()},
        "spark_runs_events_per_s": {mode: [round(r["rate"]) for r in pair] for mode, pair in runs.items()},
        "ratio": {mode: round(figures["rate"] / sdk["rate"], 2) for mode, figures in ours.items()},
        "effectively_once_over_at_least_once": round(eo["rate"] / alo["rate"], 2),
        "sdk_seconds": round(sdk["seconds"], 2),
        "spark_seconds": {mode: round(figures["seconds"], 2) for mode, figures in ours.items()},
        "spark_batches": {mode: len(figures["batch_ms"]) for mode, figures in ours.items()},
        # Start-up: the session with its first task (Python workers, their imports), and each run's time
        # outside its batches (the query's start and stop).
        "spark_session_start_s": round(session_start, 1),
        "spark_outside_batches_s": {mode: round(f["outside_batches_s"], 2) for mode, f in ours.items()},
        # CPU per event (µs): the SDK loop's process, Spark's JVM + workers + driver; the emulator's beside.
        "cpu_us_per_event": {
            "sdk": round(sdk["cpu"] / total * 1e6, 1),
            **{mode: round(figures["cpu"] / total * 1e6, 1) for mode, figures in ours.items()},
        },
        "emulator_cpu_us_per_event": {
            "sdk": round(sdk["emulator_cpu"] / total * 1e6, 1),
            **{mode: round(figures["emulator_cpu"] / total * 1e6, 1) for mode, figures in ours.items()},
        },
        "sdk_target_count": min(check["count"] for check in sdk_checks),
        "spark_target_count": {
            mode: min(c["count"] for c in checks) for mode, checks in spark_checks.items()
        },
        "counts_match": all(
            check["ok"] for check in [*sdk_checks, *(c for cs in spark_checks.values() for c in cs)]
        ),
        "latency": latency or None,
        # The app's memory at its peak: PSS counts each page of the process tree once (the goal is judged
        # on it), RSS counts the pages the daemons' forked workers share with their daemon in each of them.
        "peak_pss_mb": {k: round(v) for k, v in rss.peak_pss.items()},
        "peak_rss_mb": {k: round(v) for k, v in rss.peak.items()},
        "memory_at_peak": rss.at_peak,
        "load_average": loads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="pre-loaded source events")
    parser.add_argument("--duration", type=float, default=45, help="latency run seconds (0: skip)")
    parser.add_argument("--rate", type=int, default=1000, help="latency run events/s")
    parser.add_argument("--warmup", type=float, default=20, help="latency run seconds not measured")
    parser.add_argument(
        "--trigger", type=int, help="latency run trigger interval, seconds (default: the task's default)"
    )
    parser.add_argument("--layout", choices=("one", "per-namespace", "per-hub"), default="per-namespace")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        help="extra Spark setting KEY=VALUE (spark.kubernetes.driverEnv.NAME=VALUE: the JVM's environment)",
    )
    parser.add_argument("--profile", type=Path, help="write cProfile stats of every Spark write task here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="federator-bench-") as tmp:
        summary = run(args, Path(tmp))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
