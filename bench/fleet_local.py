"""The fleet benchmark in local mode (``bench.fleet --local N``): ``federator run`` of N tasks naming one
ReplicationApplication, so that local mode runs them as queries of one Spark application
(``federator_spark.host``, docs/local-mode.md), with the emulator it starts itself.

Measured as for the cluster's layout: from the run's start until every task replicated an event sent
before it; the application idle (PSS, CPU); N - 1 quiet tasks fed ``--rate`` events/s each, a baseline
window, then a burst of ``--backlog`` events sent as fast as one producer can into the N-th task's source
(local mode reads its manifests once: a task cannot be added to a running ``federator run``, so its
backlog arrives while it runs); the quiet tasks' lag in both windows; every target read back.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.fleet_apps import idle
from bench.fleet_traffic import START_TIMEOUT, Fleet, Pair, pairs, quiet_traffic, tally, wait_for_count
from bench.processes import Emulators, descendants, load
from bench.replication import preload

logger = logging.getLogger("bench")

APPLICATION = "fleet"
SOURCES, TARGETS = "fleet-in", "fleet-out"  # the emulator namespaces
STOP_SECONDS = 60.0  # local mode waits up to 30 s for its applications, then 10 s for the emulator


def manifest(tasks: list[Pair]) -> str:
    """The application and its members, each copying its hub in ``SOURCES`` to its hub in ``TARGETS``."""
    documents = [
        {
            "apiVersion": "federator.io/v1alpha1",
            "kind": "ReplicationApplication",
            "metadata": {"name": APPLICATION},
            "spec": {},
        }
    ]
    for pair in tasks:
        documents.append(
            {
                "apiVersion": "federator.io/v1alpha1",
                "kind": "ReplicationTask",
                "metadata": {"name": pair.source},
                "spec": {
                    "source": hub(SOURCES, pair.source),
                    "targets": [{"name": "copy", **hub(TARGETS, pair.target)}],
                    "runtime": {"applicationRef": {"name": APPLICATION}},
                },
            }
        )
    return "\n---\n".join(json.dumps(document) for document in documents)  # JSON is YAML


def hub(namespace: str, name: str) -> dict[str, Any]:
    return {"eventHub": {"connection": {"emulator": {"namespace": namespace}}, "eventHubName": name}}


def local_run(workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``federator run`` of ``args.local`` tasks, measured; stopped (SIGINT, as Ctrl-C) at the end."""
    tasks = pairs("local-", args.local)
    quiet, burst = tasks[:-1], tasks[-1]
    state, files = workdir / "run", workdir / "local"  # short: the sockets' directory is under it
    files.mkdir()
    (files / "fleet.yaml").write_text(manifest(tasks), encoding="utf-8")
    log = files / "run.log"
    with log.open("ab") as output:
        run = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("federator")),
                "run",
                "-f",
                str(files / "fleet.yaml"),
                "--state-dir",
                str(state),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so that a failed run can still be killed whole
        )
    try:
        return measured(Fleet(ready_emulators(state, tasks, log), workdir), run, quiet, burst, args, log)
    except RuntimeError as error:  # the run's directory goes with the benchmark's: its logs are kept
        raise RuntimeError(f"{error}\nlogs kept in {keep_logs(files, state)}") from error
    finally:
        stop(run)


def keep_logs(files: Path, state: Path) -> Path:
    """``federator run``'s output and its applications' logs, copied where the benchmark's temporary
    directory does not take them along."""
    kept = Path(tempfile.mkdtemp(prefix="fleet-local-logs-"))
    for log in [files / "run.log", *state.glob("applications/*/*/app.log")]:
        if log.exists():
            shutil.copy(log, kept / "_".join(log.relative_to(log.parents[2]).parts))
    return kept


def measured(
    fleet: Fleet,
    run: subprocess.Popen[bytes],
    quiet: list[Pair],
    burst: Pair,
    args: argparse.Namespace,
    log: Path,
) -> dict[str, Any]:
    """The figures of a running ``federator run``; ``log``: its output (each task's condition)."""
    started = time.monotonic()
    for pair in (*quiet, burst):
        fleet.send_one(pair.source)
    for pair in (*quiet, burst):
        wait_for_count(fleet.emus, pair.target, 1, START_TIMEOUT, log)
    all_first = time.monotonic() - started
    logger.info("local mode: every task's first event %.1f s after the emulator was ready", all_first)
    application = processes(run, b"federator_spark.host")
    fleet.emus = RunEmulators(
        hubs=fleet.emus.hubs,
        namespaces=fleet.emus.namespaces,
        emulator_pids=processes(run, b"federator_emulator"),
    )
    figures = idle(application, fleet.emus, args.settle, args.idle)
    logger.info("local mode, %d tasks idle: %s", len(quiet) + 1, figures)
    windows, catch_up = burst_phase(fleet, quiet, burst, args, log)
    reads = tally(fleet, {p.target: p.source for p in (*quiet, burst)}, windows)
    return {
        "tasks": len(quiet) + 1,
        "emulator_ready_to_every_first_event_s": round(all_first, 1),
        "idle": figures,
        "burst": catch_up,
        "read_back": reads,
        "counts_match": reads["lost"] == 0 and reads["duplicated"] == 0,
    }


def burst_phase(
    fleet: Fleet, quiet: list[Pair], burst: Pair, args: argparse.Namespace, log: Path
) -> tuple[dict[str, tuple[float, float]], dict[str, Any]]:
    with quiet_traffic(fleet, quiet, args.rate, args.warmup, log):
        measured_from = time.time()
        time.sleep(args.window)
        sent_at, started = time.time(), time.monotonic()
        preload(fleet.emus.cs(burst.source), burst.source, args.backlog, first=fleet.sent[burst.source])
        fleet.sent[burst.source] += args.backlog
        sending = time.monotonic() - started
        total = fleet.sent[burst.source]
        wait_for_count(fleet.emus, burst.target, total, args.backlog / 500, log, stall=START_TIMEOUT)
        caught_up, done_at = time.monotonic() - started, time.time()
        logger.info(
            "local mode: burst of %d sent in %.1f s, replicated in %.1f s", args.backlog, sending, caught_up
        )
    windows = {"baseline": (measured_from, sent_at), "during_backlog": (sent_at, done_at)}
    figures = {
        "events": args.backlog,
        "sent_s": round(sending, 1),
        "replicated_s": round(caught_up, 1),
        "load": load(),
    }
    return windows, figures


def ready_emulators(state: Path, tasks: list[Pair], log: Path) -> RunEmulators:
    """The emulator ``federator run`` started, once it serves: its hubs and their connection strings."""
    ready, deadline = state / "emulator" / "ready.json", time.monotonic() + START_TIMEOUT
    while not ready.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"federator run's emulator did not start in {START_TIMEOUT:.0f} s; see {log}")
        time.sleep(0.5)
    namespaces = {
        name: entry["connectionString"] for name, entry in json.loads(ready.read_text())["namespaces"].items()
    }
    hubs = {pair.source: (SOURCES, namespaces[SOURCES]) for pair in tasks}
    hubs.update({pair.target: (TARGETS, namespaces[TARGETS]) for pair in tasks})
    return RunEmulators(hubs=hubs, namespaces=namespaces)


@dataclass
class RunEmulators(Emulators):
    """The emulator of a ``federator run``: its hubs, and its processes by id (not this one's children)."""

    emulator_pids: list[int] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        return self.emulator_pids


def processes(run: subprocess.Popen[bytes], module: bytes) -> list[int]:
    """The processes under ``run`` that run ``module`` (``python -m <module>``), outermost first."""
    found = [pid for pid in descendants(run.pid) if module in cmdline(pid)]
    return [pid for pid in found if not any(pid in descendants(other) for other in found if other != pid)]


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def stop(run: subprocess.Popen[bytes]) -> None:
    """SIGINT, as Ctrl-C; what is left after ``STOP_SECONDS`` is killed with its process group."""
    if run.poll() is None:
        run.send_signal(signal.SIGINT)
        try:
            run.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
