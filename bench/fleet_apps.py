"""The fleet benchmark's Spark applications (``bench.fleet``): started in local mode's environment, and
measured idle (memory and CPU of their process trees)."""

from __future__ import annotations

import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.processes import Emulators, cpu_seconds, descendants, load, memory_mb
from federator.local.apps import app_environment
from federator.local.supervisor import ManagedProcess, spawn

STOP_GRACE = 90.0


def start_app(
    workdir: Path, name: str, argv: list[str], spark_conf: dict[str, str] | None = None
) -> ManagedProcess:
    """A Spark application in local mode's environment, its temporary files (and Unix sockets: a short
    path) under ``workdir/name/tmp``; ``spark_conf``: settings its JVM starts with, as an application's
    ``sparkConf`` gives them."""
    temporary = workdir / name / "tmp"
    temporary.mkdir(parents=True)
    environment = app_environment([], os.environ, temporary)
    if spark_conf:
        given = " ".join(f"--conf {shlex.quote(f'{key}={value}')}" for key, value in spark_conf.items())
        environment["PYSPARK_SUBMIT_ARGS"] = f"{given} {environment['PYSPARK_SUBMIT_ARGS']}"
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
