"""Many tasks in one Spark application against one application per task (#41 item 6).

    .venv/bin/python -m bench.fleet [--tasks 1,10,50] [--separate N] [--backlog 1000000] [--rate 20]
                                    [--trigger-seconds S] [--member-events 0,default] [--member-trigger-ms MS]

Each task copies a 4-partition event hub to another (source and target namespaces in emulator processes
of their own). In one run:

1. **One application** (``python -m federator_spark.host --task-dir DIR``, local mode's environment):
   task configs are renamed into its directory one at a time, each timed from then until the event sent
   to its source just before is at its target (the first includes the application's start). At each size
   of ``--tasks``, idle (no traffic) for ``--idle`` s: the application's PSS (JVM, Python workers,
   driver, as ``bench.replication`` counts them), its CPU and the emulators'. What each task beyond the
   smallest size added, and that as a ratio of the smallest size's own figures (with ``--tasks 1,...``:
   of a task alone in its application, in the same run).
2. **A backlog**, once for each of ``--member-events`` (the bound on a member's events per batch,
   ``federator_spark.scheduling``: ``0`` none, as before it existed; ``default`` the application's own),
   each in an application of its own: ``--backlog-tasks`` - 1 of the tasks above (resuming from their
   checkpoints) fed ``--rate`` events/s each (send time stamped), ``--window`` s of baseline once warm
   (``--warmup`` s, and all sent by then replicated), then a task whose source holds ``--backlog``
   events (pre-loaded before any Spark started, its name sorting before theirs) is added and catches
   up; the quiet tasks' lag (target enqueue time - send time) in the baseline, while the backlog task's
   query starts (until its first event is at its target) and during the backlog (from then until it is
   caught up): all quiet tasks' together, each one's p99 and the worst of those.
3. **One application per task** (``python -m federator_spark --task-config``), started one after another
   (timed to first event) while the next fits in memory with ``--keep-free-mb`` left, at most
   ``--separate`` (default: the largest fleet); then idle as above.
4. **Local mode** (``bench.fleet_local``): ``federator run`` of ``--local`` tasks sharing one
   application, with the emulator it starts: the same figures, a burst in place of the backlog.

The shared applications pace their members as ``--member-trigger-ms`` says (unset: the application's own
default, ``federator_spark.scheduling``).

Every target is read back: lost and duplicated events per task. Goals (#41, 2 cores): <= 100 MB and
<= 0.5 % of a core per added idle task, quiet tasks' p99 <= 1 s during the backlog, an added task's first
event <= 5 s after its config appears. The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.fleet_apps import STOP_GRACE, app_log, idle, memory_available_mb, start_app, tree_memory_mb
from bench.fleet_local import local_run
from bench.fleet_traffic import (
    START_TIMEOUT,
    Fleet,
    Pair,
    pairs,
    quiet_traffic,
    spread,
    tally,
    wait_for_count,
)
from bench.processes import emulators, load
from bench.replication import preload
from bench.tasks import PARTITIONS
from federator.local.supervisor import ManagedProcess, stop_all
from federator_spark.scheduling import MEMBER_EVENTS_SETTING, MEMBER_TRIGGER_SETTING

logger = logging.getLogger("bench")

DEFAULT_BOUND = "default"  # a --member-events entry: the application's own bound (no setting)
IDLE_FIGURES = ("pss_mb", "cpu_percent")


def member_conf(args: argparse.Namespace) -> dict[str, str]:
    """The Spark settings of a shared application of the run: the members' pace, if asked for."""
    if args.member_trigger_ms is None:
        return {}
    return {MEMBER_TRIGGER_SETTING: str(args.member_trigger_ms)}


def backlog_pair(bound: str) -> Pair:
    """The backlog task of the run with ``bound``: a source hub of its own, pre-loaded. Its task's name sorts
    before the quiet tasks' (``in-…``): Spark's FAIR scheduler breaks ties between pools by name, and a
    backlog task that sorted after them was served after them whatever the application did."""
    return Pair(f"backlog-{bound}", f"out-backlog-{bound}")


def grow_and_idle(fleet: Fleet, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 1 in one application."""
    tasks = pairs("", max(args.tasks))
    sizes: dict[str, dict[str, Any]] = {}
    added: list[float] = []
    directory, log = fleet.workdir / "task-dir", app_log(fleet.workdir, "shared")
    directory.mkdir()
    argv = ["federator_spark.host", "--task-dir", str(directory)]
    app = start_app(fleet.workdir, "shared", argv, member_conf(args))
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
    finally:
        stop_all([app], STOP_GRACE)
    return {
        "application_start_to_first_event_s": start,
        "added_task_first_event_s": spread(added),
        "sizes": sizes,
        "per_added_task": per_added_task(sizes),
    }


def per_added_task(sizes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What each task beyond the smallest fleet added, at each larger size: the difference of the idle
    figures over the difference of the sizes; ``of_smallest``: that over the smallest fleet's own figure
    (with a smallest fleet of one task: what an added task costs against a task alone, in one run)."""
    (smallest, base), *larger = sorted(sizes.items(), key=lambda item: int(item[0]))
    added = {size: int(size) - int(smallest) for size, _ in larger}
    figures_of = {}
    for size, figures in larger:
        each = {key: (figures[key] - base[key]) / added[size] for key in IDLE_FIGURES}
        figures_of[size] = {
            "pss_mb": round(each["pss_mb"], 1),
            "cpu_percent": round(each["cpu_percent"], 3),
            "of_smallest": {
                key: round(each[key] / base[key], 3) if base[key] > 0 else None for key in IDLE_FIGURES
            },
        }
    return figures_of


def backlog_runs(fleet: Fleet, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Phase 2, once per bound, each in an application of its own with the same quiet tasks."""
    quiet = pairs("", max(args.tasks))[: args.backlog_tasks - 1]
    runs = {}
    for bound in args.member_events:
        conf = member_conf(args) | ({} if bound == DEFAULT_BOUND else {MEMBER_EVENTS_SETTING: bound})
        name = f"backlog-{bound}"
        directory, log = fleet.workdir / f"{name}-tasks", app_log(fleet.workdir, name)
        directory.mkdir()
        app = start_app(fleet.workdir, name, ["federator_spark.host", "--task-dir", str(directory)], conf)
        try:
            for pair in quiet:
                fleet.config_file(pair, directory)  # they resume from their checkpoints
            add = partial(fleet.config_file, backlog_pair(bound), directory)
            runs[bound] = backlog_phase(fleet, quiet, backlog_pair(bound), add, args, log)
        finally:
            stop_all([app], STOP_GRACE)
        logger.info("backlog with member events bound %s: %s", bound, runs[bound])
    return runs


def backlog_phase(
    fleet: Fleet,
    quiet: list[Pair],
    backlog: Pair,
    add_backlog: Callable[[], object],
    args: argparse.Namespace,
    log: Path,
) -> dict[str, Any]:
    """The quiet tasks' traffic until they are warm (``--warmup`` s, and they have replicated what they
    were sent by then: each first starts, one after another, and opens its clients), a baseline window,
    then the backlog task added and caught up."""
    with quiet_traffic(fleet, quiet, args.rate, args.warmup, log) as warm:
        measured_from = time.time()
        logger.info("quiet tasks warm after %.1f s of traffic (load %s)", warm, load())
        time.sleep(args.window)
        added_at, started = time.time(), time.monotonic()
        add_backlog()
        wait_for_count(fleet.emus, backlog.target, 1, START_TIMEOUT, log)
        first, first_at = time.monotonic() - started, time.time()
        logger.info("backlog task: first event after %.1f s (load %s)", first, load())
        wait_for_count(fleet.emus, backlog.target, args.backlog, args.backlog / 500, log, stall=START_TIMEOUT)
        caught_up, done_at = time.monotonic() - started, time.time()
        logger.info("backlog of %d caught up in %.1f s (load %s)", args.backlog, caught_up, load())
    return {
        "quiet_tasks": len(quiet),
        "quiet_tasks_warm_s": round(warm, 1),
        "events": args.backlog,
        "first_event_s": round(first, 2),
        "catch_up_s": round(caught_up, 1),
        "events_per_s": round(args.backlog / caught_up),
        "windows": {
            "baseline": (measured_from, added_at),
            "backlog_starting": (added_at, first_at),  # its query starts: the source and clients open
            "during_backlog": (first_at, done_at),
        },
        "load": load(),
    }


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


def goals(shared: dict[str, Any], backlog: dict[str, dict[str, Any]]) -> dict[str, bool | None]:
    """Each goal of #41 met, at the largest fleet and with the application's own bound on a member's
    batches (else the last one run; None: not measured)."""
    largest = shared["per_added_task"].get(max(shared["sizes"], key=int), {})
    chosen = backlog.get(DEFAULT_BOUND) or (list(backlog.values())[-1] if backlog else {})
    quiet = chosen.get("quiet_lag_ms", {}).get("during_backlog", {})
    return {
        "pss_mb_per_added_task_le_100": within(largest.get("pss_mb"), 100),
        "cpu_percent_per_added_task_le_0.5": within(largest.get("cpu_percent"), 0.5),
        "quiet_p99_ms_during_backlog_le_1000": within(quiet.get("p99"), 1000),
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
    backlogs = [backlog_pair(bound) for bound in args.member_events]
    hubs = [*pairs("", max(args.tasks)), *pairs("solo-", args.separate), *backlogs]
    layout = [{"fleet-in": [p.source for p in hubs]}, {"fleet-out": [p.target for p in hubs]}]
    with emulators(workdir, layout, PARTITIONS) as emus:
        fleet = Fleet(emus, workdir, args.trigger_seconds)
        started = time.perf_counter()
        for pair in backlogs:
            preload(emus.cs(pair.source), pair.source, args.backlog)
            fleet.sent[pair.source] = args.backlog
        seconds = time.perf_counter() - started
        logger.info(
            "%d backlogs of %d pre-loaded in %.1f s (load %s)", len(backlogs), args.backlog, seconds, load()
        )
        shared = grow_and_idle(fleet, args)
        loads["shared"] = load()
        backlog = backlog_runs(fleet, args)
        loads["backlog"] = load()
        separate = separate_apps(fleet, args) if args.separate else None
        loads["separate"] = load()
        windows = {
            f"{bound}/{window}": span
            for bound, figures in backlog.items()
            for window, span in figures.pop("windows").items()
        }
        reads = tally(fleet, {p.target: p.source for p in hubs if fleet.sent[p.source]}, windows)
    local = local_figures(workdir, args)  # with an emulator of its own: after these
    loads["local"] = load()
    by_window = ("quiet_lag_ms", "quiet_task_p99_ms", "worst_quiet_task_p99_ms")
    per_window = {key: reads.pop(key) for key in by_window}
    for bound, figures in backlog.items():
        figures.update({key: of_bound(values, bound) for key, values in per_window.items()})
    return {
        "tasks": args.tasks,
        "partitions": PARTITIONS,
        "rate_per_quiet_task": args.rate,
        "trigger_seconds": args.trigger_seconds,
        "member_trigger_ms": args.member_trigger_ms,  # None: the application's default
        "shared": shared,
        "backlog": backlog,
        "backlog_quiet_p99_first_bound_over_each": bound_ratios(backlog),
        "separate": separate,
        "separate_per_application_over_shared_per_added_task": ratios(separate, shared),
        "read_back": reads,
        "counts_match": reads["lost"] == 0 and reads["duplicated"] == 0,
        "local_mode": local,
        "goals_met": goals(shared, backlog),
        "memory_available_mb": round(memory_available_mb()),
        "load_average": loads,
    }


def local_figures(workdir: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    """Phase 4 (None: not asked for); a run that does not replicate in time is reported in the summary,
    beside the figures of the phases before, not in place of them."""
    if not args.local:
        return None
    try:
        return local_run(workdir, args)
    except RuntimeError as error:  # wait_for_count's, with the tail of federator run's output
        logger.error("local mode: %s", error)
        return {"error": str(error)}


def of_bound(values: dict[str, Any], bound: str) -> dict[str, Any]:
    """The figures of the windows (``<bound>/<window>``) of the run with ``bound``, by window."""
    return {name.split("/", 1)[1]: value for name, value in values.items() if name.startswith(f"{bound}/")}


def bound_ratios(backlog: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """The quiet tasks' p99 during the backlog with the first bound run (``0``: none, as before bounds)
    over that with each other bound: how much a bound cut it, measured in one run."""
    (_, first), *others = backlog.items()

    def p99(figures: dict[str, Any]) -> float | None:
        value = figures["quiet_lag_ms"]["during_backlog"]["p99"]
        return float(value) if value is not None else None

    base = p99(first)
    cut = {}
    for bound, figures in others:
        value = p99(figures)
        cut[bound] = round(base / value, 2) if base is not None and value else None
    return cut


def bounds(text: str) -> list[str]:
    """``--member-events``: events per batch (0: no bound) or ``default``, comma-separated."""
    values = [part.strip() for part in text.split(",")]
    for value in values:
        if value != DEFAULT_BOUND and not value.isdigit():
            raise argparse.ArgumentTypeError(
                f"comma-separated event counts (0: no bound) or {DEFAULT_BOUND!r}, got {value!r}"
            )
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"each bound once, got {text!r}")
    return values


def negative_interval(args: argparse.Namespace) -> str | None:
    """Why the intervals given are refused (one is negative), naming its option; None: they are not."""
    for name in ("trigger_seconds", "member_trigger_ms"):
        value = getattr(args, name)
        if value is not None and value < 0:
            return f"--{name.replace('_', '-')}: 0 or more, got {value}"
    return None


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
    parser.add_argument(
        "--member-events",
        type=bounds,
        default=["0", DEFAULT_BOUND],
        help="a backlog run for each bound on a member's events per batch (0: none; default: the app's)",
    )
    parser.add_argument(
        "--member-trigger-ms",
        type=int,
        help="shared applications' trigger interval (ms) for members with none (0: none; default: the app's)",
    )
    parser.add_argument(
        "--local", type=int, default=10, help="tasks of one application in `federator run` (0: no local run)"
    )
    parser.add_argument("--settle", type=float, default=20, help="seconds before an idle measurement")
    parser.add_argument("--idle", type=float, default=30, help="seconds measured idle")
    parser.add_argument("--warmup", type=float, default=10, help="seconds of traffic not measured")
    parser.add_argument("--window", type=float, default=60, help="seconds of baseline traffic measured")
    args = parser.parse_args()
    for name in ("backlog", "rate", "idle"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: at least 1, got {getattr(args, name)}")
    negative = negative_interval(args)
    if negative is not None:
        parser.error(negative)
    if not 2 <= args.backlog_tasks <= max(args.tasks) + 1:
        parser.error(
            f"--backlog-tasks: from 2 (a quiet task and the backlog's) to the largest of --tasks + 1, "
            f"got {args.backlog_tasks}"
        )
    if args.local == 1 or args.local < 0:
        parser.error(f"--local: 0 (none), or 2 or more (quiet tasks and the burst's), got {args.local}")
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
