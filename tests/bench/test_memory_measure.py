"""The benchmarks' memory measure (``bench/processes.py``): a process tree's memory in PSS counts each page
once, where RSS counts a page every process that maps it counts, as PySpark's forked workers map their
daemon's pages copy-on-write."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Loaded from its file: on the tests' path ``bench`` names this folder, not the benchmarks' package.
_spec = importlib.util.spec_from_file_location(
    "bench_processes", Path(__file__).resolve().parents[2] / "bench" / "processes.py"
)
assert _spec is not None and _spec.loader is not None
processes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = processes  # its dataclasses look their module up there
_spec.loader.exec_module(processes)

ALLOCATED_MB = 120
# A parent touches ALLOCATED_MB of its own, then forks a child that only sleeps: the child shares every one
# of those pages with its parent until either writes to it.
PARENT = f"""
import os, sys, time
block = bytearray({ALLOCATED_MB} * 1024 * 1024)
for offset in range(0, len(block), 4096):
    block[offset] = 1
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
print("forked", flush=True)
time.sleep(60)
"""


@pytest.fixture
def forked_parent() -> Iterator[int]:
    with subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None and parent.stdout.readline().strip() == "forked"
            time.sleep(0.2)  # the child has started sleeping
            yield parent.pid
        finally:
            children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
            parent.kill()
            for child in children:
                subprocess.run(["kill", "-9", child], check=False)


def test_pss_counts_the_pages_a_forked_child_shares_with_its_parent_once(forked_parent: int) -> None:
    sampler = processes.RssSampler(forked_parent)  # the parent stands in for the JVM, its child for a worker
    sampler.sample()

    rss_tree = sampler.peak["jvm"] + sampler.peak["python_workers"]
    pss_tree = sampler.peak_pss["jvm"] + sampler.peak_pss["python_workers"]
    assert rss_tree > 2 * ALLOCATED_MB  # each process counts the shared block
    assert ALLOCATED_MB < pss_tree < 1.5 * ALLOCATED_MB  # the block once, split between the two
    assert sampler.peak_pss["python_workers"] < sampler.peak["python_workers"] / 1.5


def test_the_peak_names_each_kind_of_process_with_its_count_and_memory(forked_parent: int) -> None:
    sampler = processes.RssSampler(forked_parent)
    sampler.sample()

    kinds = sampler.at_peak
    assert kinds["jvm"]["count"] == 1 and kinds["driver"]["count"] == 1
    (child,) = (name for name in kinds if name not in ("jvm", "driver"))
    assert child == Path(sys.executable).name  # started without ``-m``: named by its program
    assert kinds[child]["count"] == 1
    assert kinds[child]["rss_mb"] > ALLOCATED_MB > kinds[child]["pss_mb"]
    assert sampler.peak_pss["total"] == pytest.approx(sum(k["pss_mb"] for k in kinds.values()), abs=3)


def test_a_process_that_is_gone_measures_nothing() -> None:
    never_a_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    assert processes.memory_mb(never_a_pid) == (0.0, 0.0)
