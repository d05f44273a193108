"""Event Hubs → Event Hubs replication: our Spark app on local[2] against a plain SDK copy loop.

    .venv/bin/python -m bench.replication [--events 200000] [--duration 45] [--layout per-namespace]

(As a module: run as a script, ``bench/operator.py`` would shadow the standard library's ``operator``.)

Both copy the same pre-loaded source hub (4 partitions, 1 KB events) to their own target hub on the
same emulator, in the same run: first the SDK loop (one process, sync azure-eventhub
``receive_batch`` → ``send_batch``, a receiver thread per partition; the Spark JVM is not started
yet, so it has the machine to itself), then the real ``federator-replication`` query (a task config
as the tests build it, ``availableNow``) on a session warmed by a small task, as a long-running app
would be. Every target is read back: its count must equal the source count with no duplicate. Then
the end-to-end latency at a steady rate: a producer paced at ``--rate`` events/s stamps a send time
on each event, the task runs with its normal trigger, a consumer on the target records receive
time - send time (producer and consumer run in their own process, apart from the driver's GIL);
only events sent after ``--warmup`` seconds of that traffic count.

The emulator runs in its own process(es): ``--layout one`` (one process for every namespace),
``per-namespace`` (source and target namespaces apart) or ``per-hub``. Goals on 2 cores: Spark >= 2x
the SDK loop, p99 <= 1.5 s. The last line printed is a JSON summary.
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
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

ROOT = Path(__file__).resolve().parents[1]
logger = logging.getLogger("bench")

PARTITIONS = 4
EVENT_SIZE = 1024
ID_WIDTH = 12  # each body starts with its zero-padded index: the identity the read-back counts
SEND_TIME = "bench-send-time"
# Logical namespaces and their hubs; a layout decides which emulator process serves which.
HUBS = {
    "source": ("events", "warm-in", "lat-in"),
    "target": ("sdk-out", "spark-out", "warm-out", "lat-out"),
}
WARMUP_EVENTS = 2_000


# ---------------------------------------------------------------------------------------- emulator


@dataclass
class Emulators:
    """Emulator processes; ``hubs`` maps a hub to (emulator namespace, connection string)."""

    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    hubs: dict[str, tuple[str, str]] = field(default_factory=dict)

    def cs(self, hub: str) -> str:
        return self.hubs[hub][1]

    def namespace(self, hub: str) -> str:
        return self.hubs[hub][0]


def _groups(layout: str) -> list[dict[str, list[str]]]:
    """Per emulator process: namespace name → its hubs."""
    if layout == "one":
        return [{role: list(hubs) for role, hubs in HUBS.items()}]
    if layout == "per-namespace":
        return [{role: list(hubs)} for role, hubs in HUBS.items()]
    return [{hub: [hub]} for hubs in HUBS.values() for hub in hubs]


@contextmanager
def emulators(workdir: Path, layout: str) -> Iterator[Emulators]:
    running = Emulators()
    try:
        for i, group in enumerate(_groups(layout)):
            config = {
                "namespaces": [
                    {
                        "name": ns,
                        "eventHubs": [{"name": h, "partitionCount": PARTITIONS} for h in hubs],
                    }
                    for ns, hubs in group.items()
                ]
            }
            path, ready = workdir / f"emulator-{i}.yaml", workdir / f"ready-{i}.json"
            path.write_text(yaml.safe_dump(config))
            command = [sys.executable, "-m", "federator_emulator", "--config", str(path)]
            running.processes.append(
                subprocess.Popen([*command, "--ready-file", str(ready), "--log-level", "WARNING"])
            )
            document = _wait_ready(ready, running.processes[-1])
            for ns, hubs in group.items():
                for hub in hubs:
                    running.hubs[hub] = (ns, document["namespaces"][ns]["connectionString"])
        yield running
    finally:
        for process in running.processes:
            process.terminate()
        for process in running.processes:
            process.wait(30)


def _wait_ready(ready: Path, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while not ready.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("emulator did not start")
        time.sleep(0.05)
    return json.loads(ready.read_text())


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of processes (from /proc)."""
    total = 0
    for pid in pids:
        fields = _stat(pid)
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, IndexError):
                continue
    return found


def descendants(pid: int) -> list[int]:
    tree, found, stack = children(), [], [pid]
    while stack:
        for child in tree.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process, its live descendants and the children it reaped."""
    total = 0
    for member in [pid, *descendants(pid)]:
        try:
            fields = _stat(member)
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------- events


def body(index: int) -> bytes:
    head = b"%0*d" % (ID_WIDTH, index)
    return head + b"x" * (EVENT_SIZE - len(head))


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
                seen[next(event.body)[:ID_WIDTH]] += 1
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
            data = EventData(b"".join(event.body))
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


# ---------------------------------------------------------------------------------------- spark


def spark_session(profile_dir: Path | None, conf: list[str]) -> Any:
    """The session ``spark-apps/replicate.py --master local[2]`` builds (plus quiet logs), with extra
    ``KEY=VALUE`` settings to try."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if profile_dir is not None:
        # Workers import bench.profiled; they inherit this environment.
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        os.environ["FEDERATOR_BENCH_PROFILE_DIR"] = str(profile_dir)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName("federator-bench-replication")
        .config("spark.sql.session.timeZone", "UTC")
        .master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for setting in conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def task_config(workdir: Path, emus: Emulators, source: str, target: str, **runtime: Any) -> dict[str, Any]:
    def endpoint(hub: str) -> dict[str, Any]:
        return {
            "eventHub": {"connection": {"emulator": {"namespace": emus.namespace(hub)}}, "eventHubName": hub}
        }

    name = f"{source}-to-{target}"
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": name, "namespace": "bench", "generation": 1},
        "spec": {
            "source": endpoint(source),
            "targets": [{"name": target, **endpoint(target)}],
            **({"runtime": runtime} if runtime else {}),
        },
        "checkpointLocation": f"file://{workdir / ('checkpoint-' + name)}",
        "secretEnv": {},
        "emulatorConnections": {emus.namespace(h): emus.cs(h) for h in (source, target)},
        "statusFile": str(workdir / f"status-{name}.json"),
    }


def start_task(spark: Any, raw: dict[str, Any], *, available_now: bool) -> Any:
    from federator_spark import pipeline
    from federator_spark.config import parse_task_config

    if os.environ.get("FEDERATOR_BENCH_PROFILE_DIR"):
        from bench import profiled  # the same data sources, under cProfile

        return profiled.start(spark, parse_task_config(raw), available_now=available_now)
    return pipeline.start(spark, parse_task_config(raw), available_now=available_now)


def run_available_now(spark: Any, raw: dict[str, Any]) -> tuple[float, list[dict[str, Any]]]:
    started = time.perf_counter()
    query = start_task(spark, raw, available_now=True)
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the Spark task failed: {query.exception()}")
    return elapsed, [json.loads(p.json) for p in query.recentProgress]


class RssSampler:
    """Peak RSS of the Spark driver JVM, its Python workers (the JVM's descendants) and this driver."""

    def __init__(self, jvm_pid: int) -> None:
        self.jvm_pid = jvm_pid
        self.peak = {"jvm": 0.0, "python_workers": 0.0, "driver_python": 0.0, "total": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

    def sample(self) -> None:
        workers = sum(_rss_mb(pid) for pid in descendants(self.jvm_pid))
        now = {"jvm": _rss_mb(self.jvm_pid), "python_workers": workers, "driver_python": _rss_mb(os.getpid())}
        now["total"] = sum(now.values())
        for key, value in now.items():
            self.peak[key] = max(self.peak[key], value)


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# ---------------------------------------------------------------------------------------- latency


def latency_client(
    source_cs: str, source: str, target_cs: str, target: str, rate: int, duration: float
) -> None:
    """Child process: pace ``rate`` events/s into the source for ``duration`` s, stamped with their send
    time; record when each arrives at the target; print the send start (epoch s) and each event's
    [seconds after it, latency ms] as JSON."""
    arrivals: list[tuple[float, float]] = []
    lock = threading.Lock()

    def on_batch(_context: Any, events: list[EventData]) -> None:
        now = time.time()
        with lock:
            for event in events:
                sent = (event.properties or {}).get(SEND_TIME.encode())
                if sent is not None:
                    arrivals.append((float(sent), (now - float(sent)) * 1000))

    consumer = EventHubConsumerClient.from_connection_string(target_cs, "$Default", eventhub_name=target)
    thread = threading.Thread(
        target=consumer.receive_batch,
        # A small prefetch: the SDK hands events over only after reading that many or 0.2 s of silence.
        kwargs={"on_event_batch": on_batch, "starting_position": "@latest", "prefetch": 10},
    )
    thread.start()
    time.sleep(2)  # let every partition's receiver attach before the first event
    per_tick = max(1, round(rate * 0.02))  # one batch every 20 ms
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
        measured = [[round(at - start_time, 3), round(ms, 1)] for at, ms in arrivals]
    print(json.dumps({"start": start_time, "sent": sent, "rate": actual_rate, "arrivals": measured}))


def measure_latency(
    spark: Any, workdir: Path, emus: Emulators, rate: int, duration: float, warmup: float
) -> dict[str, Any]:
    """Latency of events sent after ``warmup`` seconds of traffic at the same rate: until every Python
    worker has opened its receivers and producers (see ``eventhubs_streams``), a batch pays for them."""
    query = start_task(spark, task_config(workdir, emus, "lat-in", "lat-out"), available_now=False)
    try:
        while query.lastProgress is None:  # the first (empty) trigger ran: the query is warm
            if query.exception() is not None:
                raise RuntimeError(f"the Spark task failed: {query.exception()}")
            time.sleep(0.1)
        command = [sys.executable, "-m", "bench.replication", "--latency-client", emus.cs("lat-in")]
        command += [emus.cs("lat-out"), "--rate", str(rate), "--duration", str(warmup + duration)]
        output = subprocess.run(
            command, cwd=ROOT, check=True, capture_output=True, text=True, timeout=warmup + duration + 120
        )
        result = json.loads(output.stdout.strip().splitlines()[-1])
        if query.exception() is not None:
            raise RuntimeError(f"the Spark task failed: {query.exception()}")
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    measured_from = result["start"] + warmup
    busy = [
        p["durationMs"] for p in progress if p["numInputRows"] and _epoch(p["timestamp"]) >= measured_from
    ]
    phases = {key: percentile(sorted(d.get(key, 0) for d in busy), 0.5) for key in busy[0]} if busy else {}
    latencies = sorted(ms for at, ms in result["arrivals"] if at >= warmup)
    during_warmup = sorted(ms for at, ms in result["arrivals"] if at < warmup)
    return {
        "sent": result["sent"],
        "received": len(result["arrivals"]),
        "rate": round(result["rate"]),
        "measured_events": len(latencies),
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "max_ms": latencies[-1] if latencies else None,
        "warmup_s": warmup,
        "warmup_p99_ms": percentile(during_warmup, 0.99),
        "batch_ms_p50": phases,  # the Spark phases of measured batches that moved events
    }


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


# ---------------------------------------------------------------------------------------- main


def load() -> str:
    with open("/proc/loadavg", encoding="utf-8") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    total = args.events
    with emulators(workdir, args.layout) as emus:
        emulator_pids = [p.pid for p in emus.processes]
        started = time.perf_counter()
        preload(emus.cs("events"), "events", total)
        preload(emus.cs("warm-in"), "warm-in", min(WARMUP_EVENTS, total))
        logger.info("pre-loaded %d events in %.1f s (load %s)", total, time.perf_counter() - started, load())

        cpu, own = cpu_seconds(emulator_pids), cpu_seconds([os.getpid()])
        sdk_seconds = sdk_copy(emus.cs("events"), "events", emus.cs("sdk-out"), "sdk-out", total)
        sdk_emulator_cpu = cpu_seconds(emulator_pids) - cpu
        sdk_cpu = cpu_seconds([os.getpid()]) - own
        sdk_rate = total / sdk_seconds
        logger.info(
            "SDK copy loop: %.0f events/s (%.1f s; CPU %.1f s, emulator CPU %.1f s; load %s)",
            sdk_rate,
            sdk_seconds,
            sdk_cpu,
            sdk_emulator_cpu,
            load(),
        )

        cold = time.perf_counter()
        spark = spark_session(args.profile, args.conf)
        jvm_pid = spark.sparkContext._gateway.proc.pid
        with RssSampler(jvm_pid) as rss:
            run_available_now(spark, task_config(workdir, emus, "warm-in", "warm-out"))
            logger.info("Spark session + warm-up task: %.1f s", time.perf_counter() - cold)
            cpu, own = cpu_seconds(emulator_pids), tree_cpu_seconds(jvm_pid) + cpu_seconds([os.getpid()])
            spark_seconds, progress = run_available_now(
                spark, task_config(workdir, emus, "events", "spark-out")
            )
            spark_emulator_cpu = cpu_seconds(emulator_pids) - cpu
            spark_cpu = tree_cpu_seconds(jvm_pid) + cpu_seconds([os.getpid()]) - own
            spark_rate = total / spark_seconds
            batches = [p["durationMs"].get("triggerExecution") for p in progress if p["numInputRows"]]
            logger.info(
                "Spark local[2]: %.0f events/s (%.1f s, %d batches %s ms; CPU %.1f s, emulator CPU %.1f s;"
                " load %s)",
                spark_rate,
                spark_seconds,
                len(batches),
                batches,
                spark_cpu,
                spark_emulator_cpu,
                load(),
            )
            latency = None
            if args.duration > 0:
                latency = measure_latency(spark, workdir, emus, args.rate, args.duration, args.warmup)
                logger.info("latency at %.0f events/s: %s (load %s)", latency["rate"], latency, load())
        spark.stop()
        sdk_check = verify(emus.cs("sdk-out"), "sdk-out", total)
        spark_check = verify(emus.cs("spark-out"), "spark-out", total)
        logger.info("read back: SDK %s, Spark %s", sdk_check, spark_check)
    return {
        "events": total,
        "event_bytes": EVENT_SIZE,
        "partitions": PARTITIONS,
        "layout": args.layout,
        "spark_conf": args.conf,
        "sdk_events_per_s": round(sdk_rate),
        "spark_events_per_s": round(spark_rate),
        "ratio": round(spark_rate / sdk_rate, 2),
        "sdk_seconds": round(sdk_seconds, 2),
        "spark_seconds": round(spark_seconds, 2),
        "spark_batches": len(batches),
        "cpu_s": {"sdk": round(sdk_cpu, 1), "spark": round(spark_cpu, 1)},
        "emulator_cpu_s": {"sdk": round(sdk_emulator_cpu, 1), "spark": round(spark_emulator_cpu, 1)},
        "sdk_target_count": sdk_check["count"],
        "spark_target_count": spark_check["count"],
        "counts_match": sdk_check["ok"] and spark_check["ok"],
        "latency": latency,
        "peak_rss_mb": {k: round(v) for k, v in rss.peak.items()},
        "load_average": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="pre-loaded source events")
    parser.add_argument("--duration", type=float, default=45, help="latency run seconds (0: skip)")
    parser.add_argument("--rate", type=int, default=1000, help="latency run events/s")
    parser.add_argument("--warmup", type=float, default=20, help="latency run seconds not measured")
    parser.add_argument("--layout", choices=("one", "per-namespace", "per-hub"), default="per-namespace")
    parser.add_argument("--conf", action="append", default=[], help="extra Spark setting KEY=VALUE")
    parser.add_argument("--profile", type=Path, help="write cProfile stats of every Spark read/write here")
    parser.add_argument(
        "--latency-client", nargs=2, metavar=("SOURCE_CS", "TARGET_CS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    if args.latency_client:
        latency_client(
            args.latency_client[0], "lat-in", args.latency_client[1], "lat-out", args.rate, args.duration
        )
        return
    with tempfile.TemporaryDirectory(prefix="federator-bench-") as tmp:
        summary = run(args, Path(tmp))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
