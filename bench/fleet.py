"""Many tasks in one Spark application against one application per task (#41 item 6).

    .venv/bin/python -m bench.fleet [--tasks 1,10,50] [--separate N] [--backlog 1000000] [--rate 20]
                                    [--trigger-seconds S]

Each task copies a 4-partition event hub to another (source and target namespaces in emulator processes
of their own). In one run:

1. **One application** (``python -m federator_spark.host --task-dir DIR``, local mode's environment):
   task configs are renamed into its directory one at a time, each timed from then until the event sent
   to its source just before is at its target (the first includes the application's start). At each size
   of ``--tasks``, idle (no traffic) for ``--idle`` s: the application's PSS (JVM, Python workers,
   driver, as ``bench.replication`` counts them), its CPU and the emulators'.
2. **A backlog** there, shrunk to ``--backlog-tasks`` - 1 quiet tasks fed ``--rate`` events/s each (send
   time stamped): ``--window`` s of baseline, then a task whose source holds ``--backlog`` events
   (pre-loaded before any Spark started) is added and catches up; the quiet tasks' lag (target enqueue
   time - send time) in both windows, once warm (``--warmup`` s, and all sent by then replicated).
3. **One application per task** (``python -m federator_spark --task-config``), started one after another
   (timed to first event) while the next fits in memory with ``--keep-free-mb`` left, at most
   ``--separate`` (default: the largest fleet); then idle as above.

Every target is read back: lost and duplicated events per task. Goals (#41, 2 cores): <= 100 MB and
<= 0.5 % of a core per added idle task, quiet tasks' p99 <= 1 s during the backlog, an added task's first
event <= 5 s after its config appears. The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench.processes import Emulators, cpu_seconds, descendants, emulators, load, memory_mb
from bench.replication import hub_count, preload
from bench.replication_latency import SEND_TIME, percentile
from bench.tasks import ID_WIDTH, PARTITIONS, body, task_config
from federator.local.apps import app_environment
from federator.local.supervisor import ManagedProcess, spawn, stop_all

logger = logging.getLogger("bench")

TICK_SECONDS = 0.25  # the quiet tasks' traffic: one batch per source hub each tick
START_TIMEOUT = 300.0  # an application's start on a loaded machine, and a task's first event
STOP_GRACE = 90.0


@dataclass(frozen=True)
class Pair:
    """A task: the hub it copies and the hub it copies to."""

    source: str
    target: str


BACKLOG = Pair("in-backlog", "out-backlog")


@dataclass
class Fleet:
    """The emulators, where files go, and how many events each source hub was sent (each event's body
    starts with its index in its hub: the identity the read-back counts)."""

    emus: Emulators
    workdir: Path
    trigger_seconds: int | None = None  # the tasks' trigger interval (None: the API's default, 0)
    sent: Counter[str] = field(default_factory=Counter)

    def config_file(self, pair: Pair, directory: Path) -> Path:
        """The task's config, written as a ConfigMap update would be (a hidden file, then a rename)."""
        hidden, path = directory / f".{pair.source}.json", directory / f"{pair.source}.json"
        config = task_config(self.workdir, self.emus, pair.source, pair.target, self.trigger_seconds)
        hidden.write_text(config.to_json(), encoding="utf-8")
        os.replace(hidden, path)
        return path

    def send_one(self, hub: str) -> None:
        with EventHubProducerClient.from_connection_string(self.emus.cs(hub), eventhub_name=hub) as producer:
            self.send_stamped(producer, hub, partition=0, count=1)

    def send_stamped(self, producer: EventHubProducerClient, hub: str, partition: int, count: int) -> None:
        batch = producer.create_batch(partition_id=str(partition))
        for index in range(self.sent[hub], self.sent[hub] + count):
            data = EventData(body(index))
            data.properties = {SEND_TIME: repr(time.time())}
            batch.add(data)
        producer.send_batch(batch)
        self.sent[hub] += count

    def first_event(self, pair: Pair, place: Callable[[Pair], object], log: Path) -> float:
        """Seconds from ``place(pair)``, which makes the task run, until the event sent to its source just
        before is at its target."""
        self.send_one(pair.source)
        started = time.monotonic()
        place(pair)
        wait_for_count(self.emus, pair.target, 1, START_TIMEOUT, log)
        return round(time.monotonic() - started, 2)


def pairs(prefix: str, count: int) -> list[Pair]:
    return [Pair(f"in-{prefix}{i:03d}", f"out-{prefix}{i:03d}") for i in range(count)]


def wait_for_count(emus: Emulators, hub: str, at_least: int, timeout: float, log: Path) -> None:
    """Until ``hub`` holds ``at_least`` events (one client, asked every 0.2 s); not within ``timeout`` s,
    an error that shows the last lines of the application's ``log``."""
    deadline = time.monotonic() + timeout
    with EventHubProducerClient.from_connection_string(emus.cs(hub), eventhub_name=hub) as client:
        ids = client.get_partition_ids()
        while time.monotonic() < deadline:
            held = sum(client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1 for p in ids)
            if held >= at_least:
                return
            time.sleep(0.2)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
    raise RuntimeError(f"{hub} did not reach {at_least} events in {timeout:.0f} s; {log}:\n{tail}")


def start_app(workdir: Path, name: str, argv: list[str]) -> ManagedProcess:
    """A Spark application in local mode's environment, its temporary files (and Unix sockets: a short
    path) under ``workdir/name/tmp``."""
    temporary = workdir / name / "tmp"
    temporary.mkdir(parents=True)
    environment = app_environment([], os.environ, temporary)
    return spawn(
        name, [sys.executable, "-m", *argv, "--master", "local[2]"], environment, app_log(workdir, name)
    )


def app_log(workdir: Path, name: str) -> Path:
    return workdir / name / "app.log"


def memory_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("/proc/meminfo has no MemAvailable")


def members(roots: list[int]) -> list[int]:
    return [pid for root in roots for pid in (root, *descendants(root))]


def tree_memory_mb(roots: list[int]) -> tuple[float, float, int]:
    """PSS and RSS of the process trees under ``roots``, and how many processes they hold."""
    figures = [memory_mb(pid) for pid in members(roots)]
    return sum(pss for _, pss in figures), sum(rss for rss, _ in figures), len(figures)


def tree_cpu(roots: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each live process of the trees; not what they reaped, or a worker
    ending in a measured window would bring its whole life's CPU into it."""
    seconds = {}
    for pid in members(roots):
        try:
            seconds[pid] = cpu_seconds([pid])
        except OSError:
            continue  # ended meanwhile
    return seconds


def idle(roots: list[int], emus: Emulators, settle: float, seconds: float) -> dict[str, Any]:
    """The applications under ``roots`` with no traffic: after ``settle`` s, their PSS (mean of one
    sample a second), RSS and CPU over ``seconds``, in % of one core, and the emulators' CPU meanwhile."""
    time.sleep(settle)
    cpu, emulator_cpu = tree_cpu(roots), cpu_seconds(emus.pids)
    started = time.monotonic()
    samples = []
    while time.monotonic() - started < seconds:
        samples.append(tree_memory_mb(roots))
        time.sleep(1.0)
    wall = time.monotonic() - started
    return {
        "pss_mb": round(statistics.fmean(s[0] for s in samples)),
        "rss_mb": round(statistics.fmean(s[1] for s in samples)),
        "processes": samples[-1][2],
        "cpu_percent": round(sum(t - cpu.get(p, 0.0) for p, t in tree_cpu(roots).items()) / wall * 100, 2),
        "emulator_cpu_percent": round((cpu_seconds(emus.pids) - emulator_cpu) / wall * 100, 2),
        "load": load(),
    }


class Traffic(threading.Thread):
    """``rate`` events/s into each hub of ``hubs``, one batch per hub each tick, the partitions in turn;
    paced against the schedule, so a slow send does not lower the rate. A failed send ends it (raised by
    ``stop``)."""

    def __init__(self, fleet: Fleet, hubs: list[str], rate: int) -> None:
        super().__init__(name="fleet-traffic", daemon=True)
        self.fleet, self.hubs, self.rate = fleet, hubs, rate
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.started = time.time()

    def run(self) -> None:
        self.started = time.time()
        cs = self.fleet.emus.cs
        producers = {
            h: EventHubProducerClient.from_connection_string(cs(h), eventhub_name=h) for h in self.hubs
        }
        per_tick = max(1, round(self.rate * TICK_SECONDS))
        started, ticks = time.monotonic(), 0
        try:
            while not self.stopping.is_set():
                for hub, producer in producers.items():
                    self.fleet.send_stamped(producer, hub, ticks % PARTITIONS, per_tick)
                ticks += 1
                self.stopping.wait(max(0.0, started + ticks * per_tick / self.rate - time.monotonic()))
        except BaseException as error:  # raised again by stop(), in the benchmark's thread
            self.error = error
        finally:
            for producer in producers.values():
                producer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        if self.error is not None:
            raise RuntimeError(f"the quiet tasks' traffic failed: {self.error}") from self.error


def grow_and_idle(fleet: Fleet, args: argparse.Namespace) -> dict[str, Any]:
    """Phases 1 and 2 in one application."""
    tasks = pairs("", max(args.tasks))
    sizes: dict[str, dict[str, Any]] = {}
    added: list[float] = []
    directory, log = fleet.workdir / "task-dir", app_log(fleet.workdir, "shared")
    directory.mkdir()
    app = start_app(fleet.workdir, "shared", ["federator_spark.host", "--task-dir", str(directory)])
    try:
        place = partial(fleet.config_file, directory=directory)
        start = fleet.first_event(tasks[0], place, log)
        logger.info("one application: its first task's first event %.1f s after its start", start)
        running = 1
        for size in args.tasks:
            added += [fleet.first_event(pair, place, log) for pair in tasks[running:size]]
            running = max(running, size)
            sizes[str(size)] = idle([app.pid], fleet.emus, args.settle, args.idle)
            logger.info("one application, %d tasks idle: %s", size, sizes[str(size)])
        quiet = tasks[: args.backlog_tasks - 1]
        for pair in tasks[len(quiet) : running]:
            (directory / f"{pair.source}.json").unlink()  # the others stop; the quiet ones run on
        backlog = backlog_phase(fleet, quiet, partial(place, BACKLOG), args, log)
    finally:
        stop_all([app], STOP_GRACE)
    return {
        "application_start_to_first_event_s": start,
        "added_task_first_event_s": spread(added),
        "sizes": sizes,
        "per_added_task": per_added_task(sizes),
        "backlog": backlog,
    }


def per_added_task(sizes: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """What each task beyond the smallest fleet added, at each larger size: the difference of the idle
    figures over the difference of the sizes."""
    (smallest, base), *larger = sorted(sizes.items(), key=lambda item: int(item[0]))
    added = {size: int(size) - int(smallest) for size, _ in larger}
    return {
        size: {
            "pss_mb": round((figures["pss_mb"] - base["pss_mb"]) / added[size], 1),
            "cpu_percent": round((figures["cpu_percent"] - base["cpu_percent"]) / added[size], 3),
        }
        for size, figures in larger
    }


def backlog_phase(
    fleet: Fleet, quiet: list[Pair], add_backlog: Callable[[], object], args: argparse.Namespace, log: Path
) -> dict[str, Any]:
    """The quiet tasks' traffic until they are warm (``--warmup`` s, and they have replicated what they
    were sent by then: after idling, each first opens its clients), a baseline window, then the backlog
    task added and caught up."""
    traffic = Traffic(fleet, [pair.source for pair in quiet], args.rate)
    traffic.start()
    try:
        time.sleep(args.warmup)
        drain(fleet, quiet, log)
        measured_from = time.time()
        warm = measured_from - traffic.started
        logger.info("quiet tasks warm after %.1f s of traffic (load %s)", warm, load())
        time.sleep(args.window)
        added_at, started = time.time(), time.monotonic()
        add_backlog()
        wait_for_count(fleet.emus, BACKLOG.target, 1, START_TIMEOUT, log)
        first = time.monotonic() - started
        logger.info("backlog task: first event after %.1f s (load %s)", first, load())
        wait_for_count(fleet.emus, BACKLOG.target, args.backlog, START_TIMEOUT + args.backlog / 500, log)
        caught_up, done_at = time.monotonic() - started, time.time()
        logger.info("backlog of %d caught up in %.1f s (load %s)", args.backlog, caught_up, load())
    finally:
        traffic.stop()
    drain(fleet, quiet, log)  # what was sent last is replicated before the application stops
    return {
        "quiet_tasks": len(quiet),
        "quiet_tasks_warm_s": round(warm, 1),
        "events": args.backlog,
        "first_event_s": round(first, 2),
        "catch_up_s": round(caught_up, 1),
        "events_per_s": round(args.backlog / caught_up),
        "windows": {"baseline": (measured_from, added_at), "during_backlog": (added_at, done_at)},
        "load": load(),
    }


def drain(fleet: Fleet, tasks: list[Pair], log: Path) -> None:
    """Until each task's target holds what its source had been sent when this began."""
    sent = {pair: fleet.sent[pair.source] for pair in tasks}
    for pair, count in sent.items():
        wait_for_count(fleet.emus, pair.target, count, START_TIMEOUT, log)


def separate_apps(fleet: Fleet, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 3: one application per task while the next one fits."""
    directory = fleet.workdir / "separate"
    directory.mkdir()
    apps: list[ManagedProcess] = []
    times: list[float] = []
    available = memory_available_mb()
    per_app = 0.0
    try:
        for index, pair in enumerate(pairs("solo-", args.separate)):
            if apps and memory_available_mb() - per_app < args.keep_free_mb:
                break
            name = f"solo-{index}"

            def launch(pair: Pair, name: str = name) -> None:
                config = fleet.config_file(pair, directory)
                apps.append(start_app(fleet.workdir, name, ["federator_spark", "--task-config", str(config)]))

            times.append(fleet.first_event(pair, launch, app_log(fleet.workdir, name)))
            per_app = max(per_app, tree_memory_mb([apps[-1].pid])[0])
        figures = idle([app.pid for app in apps], fleet.emus, args.settle, args.idle)
    finally:
        stop_all(apps, STOP_GRACE)
    logger.info("%d applications of one task each, idle: %s", len(apps), figures)
    return {
        "applications": len(apps),
        "fit_by_memory": int((available - args.keep_free_mb) // per_app) if per_app else 0,
        "start_to_first_event_s": spread(times),
        "idle": figures,
        "per_application": {
            "pss_mb": round(figures["pss_mb"] / len(apps), 1),
            "cpu_percent": round(figures["cpu_percent"] / len(apps), 3),
        },
    }


def read_back(emus: Emulators, hub: str) -> list[tuple[str, float | None, float]]:
    """Every event the hub holds: its identity, its send time (if stamped) and its enqueue time."""
    held = hub_count(emus.cs(hub), hub)
    found: list[tuple[str, float | None, float]] = []
    if not held:
        return found
    lock, complete = threading.Lock(), threading.Event()  # a receiving thread per partition

    def on_batch(_context: Any, events: list[EventData]) -> None:
        with lock:
            for event in events:
                stamp = (event.properties or {}).get(SEND_TIME.encode())
                enqueued = event.enqueued_time.timestamp() if event.enqueued_time else time.time()
                found.append((event.body_as_str()[:ID_WIDTH], float(stamp) if stamp else None, enqueued))
            if len(found) >= held:
                complete.set()

    consumer = EventHubConsumerClient.from_connection_string(emus.cs(hub), "$Default", eventhub_name=hub)
    options = {"on_event_batch": on_batch, "starting_position": "-1", "max_batch_size": 500, "prefetch": 1000}
    reader = threading.Thread(target=consumer.receive_batch, kwargs=options)
    reader.start()
    complete.wait(60 + held / 2000)
    consumer.close()
    reader.join(30)
    with lock:
        return list(found)


def tally(fleet: Fleet, targets: dict[str, str], windows: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Each task's target (target hub → its source hub) read back: lost and duplicated events against
    what its source was sent, and the stamped events' lag in each window."""
    per_task: dict[str, dict[str, int]] = {}
    lags: dict[str, list[float]] = {name: [] for name in windows}
    for target, source in targets.items():
        expected = fleet.sent[source]
        events = read_back(fleet.emus, target)
        seen = Counter(identity for identity, _, _ in events)
        wanted = {f"{i:0{ID_WIDTH}d}" for i in range(expected)}
        per_task[source] = {"lost": len(wanted - set(seen)), "duplicated": sum(n - 1 for n in seen.values())}
        for name, (begin, end) in windows.items():
            lags[name] += [
                (at - sent) * 1000 for _, sent, at in events if sent is not None and begin <= sent < end
            ]
    return {
        "tasks": len(per_task),
        "lost": sum(t["lost"] for t in per_task.values()),
        "duplicated": sum(t["duplicated"] for t in per_task.values()),
        "tasks_not_exact": {k: v for k, v in per_task.items() if v["lost"] or v["duplicated"]},
        "quiet_lag_ms": {name: spread(values) for name, values in lags.items()},
    }


def spread(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": percentile(ordered, 0.5),
        "p99": percentile(ordered, 0.99),
        "max": round(ordered[-1], 1) if ordered else None,
    }


def goals(shared: dict[str, Any], reads: dict[str, Any]) -> dict[str, bool | None]:
    """Each goal of #41 met, at the largest fleet (None: not measured)."""
    largest = shared["per_added_task"].get(max(shared["sizes"], key=int), {})
    return {
        "pss_mb_per_added_task_le_100": within(largest.get("pss_mb"), 100),
        "cpu_percent_per_added_task_le_0.5": within(largest.get("cpu_percent"), 0.5),
        "quiet_p99_ms_during_backlog_le_1000": within(reads["quiet_lag_ms"]["during_backlog"]["p99"], 1000),
        "added_task_first_event_s_le_5": within(shared["added_task_first_event_s"]["max"], 5),
    }


def within(value: float | None, goal: float) -> bool | None:
    return None if value is None else value <= goal


def ratios(separate: dict[str, Any] | None, shared: dict[str, Any]) -> dict[str, float | None] | None:
    """What an application of its own costs a task, over what a task added to the shared one costs."""
    if separate is None:
        return None
    added = shared["per_added_task"].get(max(shared["sizes"], key=int), {})
    return {
        key: round(separate["per_application"][key] / added[key], 1) if added.get(key, 0) > 0 else None
        for key in ("pss_mb", "cpu_percent")
    }


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    loads = {"start": load()}
    hubs = [*pairs("", max(args.tasks)), *pairs("solo-", args.separate), BACKLOG]
    layout = [{"fleet-in": [p.source for p in hubs]}, {"fleet-out": [p.target for p in hubs]}]
    with emulators(workdir, layout, PARTITIONS) as emus:
        fleet = Fleet(emus, workdir, args.trigger_seconds)
        started = time.perf_counter()
        preload(emus.cs(BACKLOG.source), BACKLOG.source, args.backlog)
        fleet.sent[BACKLOG.source] = args.backlog
        seconds = time.perf_counter() - started
        logger.info("backlog of %d pre-loaded in %.1f s (load %s)", args.backlog, seconds, load())
        shared = grow_and_idle(fleet, args)
        loads["shared"] = load()
        separate = separate_apps(fleet, args) if args.separate else None
        loads["separate"] = load()
        windows = shared["backlog"].pop("windows")
        reads = tally(fleet, {p.target: p.source for p in hubs if fleet.sent[p.source]}, windows)
    return {
        "tasks": args.tasks,
        "partitions": PARTITIONS,
        "rate_per_quiet_task": args.rate,
        "trigger_seconds": args.trigger_seconds,
        "shared": shared,
        "separate": separate,
        "separate_per_application_over_shared_per_added_task": ratios(separate, shared),
        "read_back": reads,
        "counts_match": reads["lost"] == 0 and reads["duplicated"] == 0,
        "goals_met": goals(shared, reads),
        "memory_available_mb": round(memory_available_mb()),
        "load_average": loads,
    }


def sizes(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated task counts, got {text!r}") from None
    if not values or values[0] < 1 or values != sorted(set(values)):
        raise argparse.ArgumentTypeError(f"distinct ascending counts of at least 1, got {text!r}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=sizes, default=[1, 10, 50], help="fleet sizes in one application")
    parser.add_argument("--separate", type=int, help="at most this many one-task applications (0: none)")
    parser.add_argument("--keep-free-mb", type=int, default=4096, help="memory a further application leaves")
    parser.add_argument("--backlog", type=int, default=1_000_000, help="events the backlog task catches up")
    parser.add_argument(
        "--backlog-tasks", type=int, default=10, help="tasks during the backlog, its own included"
    )
    parser.add_argument("--rate", type=int, default=20, help="events/s into each quiet task")
    parser.add_argument(
        "--trigger-seconds", type=int, help="every task's trigger interval (default: the API's, none)"
    )
    parser.add_argument("--settle", type=float, default=20, help="seconds before an idle measurement")
    parser.add_argument("--idle", type=float, default=30, help="seconds measured idle")
    parser.add_argument("--warmup", type=float, default=10, help="seconds of traffic not measured")
    parser.add_argument("--window", type=float, default=60, help="seconds of baseline traffic measured")
    args = parser.parse_args()
    for name in ("backlog", "rate", "idle"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: at least 1, got {getattr(args, name)}")
    if args.trigger_seconds is not None and args.trigger_seconds < 0:
        parser.error(f"--trigger-seconds: 0 or more, got {args.trigger_seconds}")
    if not 2 <= args.backlog_tasks <= max(args.tasks) + 1:
        parser.error(
            f"--backlog-tasks: from 2 (a quiet task and the backlog's) to the largest of --tasks + 1, "
            f"got {args.backlog_tasks}"
        )
    if args.separate is None:
        args.separate = max(args.tasks)
    if args.separate < 0:
        parser.error(f"--separate: 0 (none) or more, got {args.separate}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
        summary = run(args, Path(tmp))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
