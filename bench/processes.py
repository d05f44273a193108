"""What benchmarks need around the code they measure: emulator processes, and CPU time and peak RSS of
process trees read from /proc (Linux)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# ---------------------------------------------------------------------------------------- emulator


@dataclass
class Emulators:
    """Emulator processes; ``hubs`` maps a hub to (emulator namespace, connection string), ``namespaces``
    a namespace to its connection string."""

    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    hubs: dict[str, tuple[str, str]] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)

    def cs(self, hub: str) -> str:
        return self.hubs[hub][1]

    def namespace(self, hub: str) -> str:
        return self.hubs[hub][0]

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]


@contextmanager
def emulators(workdir: Path, groups: list[dict[str, list[str]]], partitions: int) -> Iterator[Emulators]:
    """One emulator process per group (namespace name → its event hubs, of ``partitions`` each)."""
    configs = [
        {
            "namespaces": [
                {"name": ns, "eventHubs": [{"name": h, "partitionCount": partitions} for h in hubs]}
                for ns, hubs in group.items()
            ]
        }
        for group in groups
    ]
    with emulator_processes(workdir, configs) as running:
        yield running


@contextmanager
def emulator_processes(workdir: Path, configs: list[dict[str, Any]]) -> Iterator[Emulators]:
    """One emulator process per config (the emulator's own YAML schema)."""
    running = Emulators()
    try:
        for i, config in enumerate(configs):
            path, ready = workdir / f"emulator-{i}.yaml", workdir / f"ready-{i}.json"
            path.write_text(yaml.safe_dump(config))
            command = [sys.executable, "-m", "federator_emulator", "--config", str(path)]
            running.processes.append(
                subprocess.Popen([*command, "--ready-file", str(ready), "--log-level", "WARNING"])
            )
            document = _wait_ready(ready, running.processes[-1])
            for namespace in config["namespaces"]:
                ns = namespace["name"]
                running.namespaces[ns] = document["namespaces"][ns]["connectionString"]
                for hub in namespace.get("eventHubs", []):
                    running.hubs[hub["name"]] = (ns, running.namespaces[ns])
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
    ready_file: dict[str, Any] = json.loads(ready.read_text())
    return ready_file


# ---------------------------------------------------------------------------------------- /proc


def load() -> str:
    with open("/proc/loadavg", encoding="utf-8") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of processes."""
    return sum(int(f) for pid in pids for f in _stat(pid)[11:13]) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                tree.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, IndexError):
                continue
    found, stack = [], [pid]
    while stack:
        for child in tree.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process, its live descendants and the children they reaped."""
    total = 0
    for member in [pid, *descendants(pid)]:
        try:
            total += sum(int(f) for f in _stat(member)[11:15])
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def memory_mb(pid: int) -> tuple[float, float]:
    """RSS and PSS of a process. RSS counts every page a process maps, so the children PySpark's daemons
    fork each count again the modules they share copy-on-write with their daemon; PSS divides each page
    among the processes that map it, and summed over a tree counts each of the tree's pages once (pages
    shared with processes outside the tree, such as another JVM's ``libjvm.so``, are split with them)."""
    figures = {"Rss": 0, "Pss": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, _, value = line.partition(":")
            if key in figures:
                figures[key] = int(value.split()[0])
    except OSError:
        pass
    return figures["Rss"] / 1024, figures["Pss"] / 1024


def _kind(pid: int, jvm_pid: int) -> str:
    """What a process of the tree is: the module a Python process runs (``-m ...``), marked when a
    daemon forked it; ``jvm`` and ``driver`` for the two ends."""
    if pid == jvm_pid:
        return "jvm"
    if pid == os.getpid():
        return "driver"
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        parent = int(_stat(pid)[1])
    except (OSError, IndexError, ValueError):
        return "gone"
    kind = " ".join(args[args.index("-m") + 1 :]).strip() if "-m" in args else Path(args[0]).name
    if not kind:
        return "gone"  # exited while being sampled: an empty command line
    return kind if parent == jvm_pid else f"{kind} (forked)"


class RssSampler:
    """Peak memory, sampled twice a second, of a JVM, its descendants (Spark's Python workers) and this
    process (the Spark driver's Python side): ``peak`` in RSS, ``peak_pss`` in PSS (see ``memory_mb``),
    and ``at_peak``, the processes by kind at the moment the tree's PSS peaked."""

    def __init__(self, jvm_pid: int) -> None:
        self.jvm_pid = jvm_pid
        self.peak = dict.fromkeys(("jvm", "python_workers", "driver_python", "total"), 0.0)
        self.peak_pss = dict(self.peak)
        self.at_peak: dict[str, dict[str, float]] = {}
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
        pids = [self.jvm_pid, *descendants(self.jvm_pid), os.getpid()]
        measured = {pid: memory_mb(pid) for pid in pids}
        workers = pids[1:-1]
        for index, peak in enumerate((self.peak, self.peak_pss)):  # 0: RSS, 1: PSS
            now = {
                "jvm": measured[self.jvm_pid][index],
                "python_workers": sum(measured[pid][index] for pid in workers),
                "driver_python": measured[os.getpid()][index],
            }
            now["total"] = sum(now.values())
            if index == 1 and now["total"] > peak["total"]:
                self.at_peak = self._by_kind(measured)
            for key, value in now.items():
                peak[key] = max(peak[key], value)

    def _by_kind(self, measured: dict[int, tuple[float, float]]) -> dict[str, dict[str, float]]:
        kinds: dict[str, dict[str, float]] = {}
        for pid, (rss, pss) in measured.items():
            kind = kinds.setdefault(_kind(pid, self.jvm_pid), {"count": 0, "rss_mb": 0.0, "pss_mb": 0.0})
            kind["count"] += 1
            kind["rss_mb"] += rss
            kind["pss_mb"] += pss
        return {name: {k: round(v) for k, v in figures.items()} for name, figures in sorted(kinds.items())}
