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


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class RssSampler:
    """Peak RSS, sampled twice a second, of a JVM, its descendants (Spark's Python workers) and this
    process (the Spark driver's Python side)."""

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
        now = {
            "jvm": rss_mb(self.jvm_pid),
            "python_workers": sum(rss_mb(pid) for pid in descendants(self.jvm_pid)),
            "driver_python": rss_mb(os.getpid()),
        }
        now["total"] = sum(now.values())
        for key, value in now.items():
            self.peak[key] = max(self.peak[key], value)
