"""The processes of one local plan: the emulator (when a task points at it) and one Spark application per
task, started in that order and stopped in the reverse one."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from federator import reasons
from federator.local.emulator import with_ports
from federator.local.observe import LogWatch, TaskRow, app_row, blocked_row, read_status, started_marker
from federator.local.plan import BlockedTask, LocalPlan, TaskRun, with_emulator_connections
from federator.local.state import StateDir, write_atomically
from federator.local.supervisor import ManagedProcess, spawn, stop_all

EMULATOR_START_SECONDS = 60.0
APP_GRACE_SECONDS = 30.0
"""Spark finishes the running micro-batch when asked to stop; a batch of a local task takes seconds."""
EMULATOR_GRACE_SECONDS = 10.0
LOCAL_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # progress bars would fill the log file
}


class LocalEnvironmentError(RuntimeError):
    """Something local mode needs is missing on this machine (Java, PySpark, the replication app)."""


def check_replication_app() -> None:
    """Local mode runs `python -m federator_spark` (the package of `spark-apps/`) with Spark in-process."""
    for module, extra in (("pyspark", "PySpark"), ("federator_spark", "federator_spark")):
        if importlib.util.find_spec(module) is None:
            raise LocalEnvironmentError(
                f"{extra} is not installed: pip install -e '.[spark]' (or ./dev setup)"
            )
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        raise LocalEnvironmentError("Java 17 is required for Spark: install it or set JAVA_HOME")


@dataclass
class App:
    task: TaskRun
    process: ManagedProcess
    log: LogWatch


class LocalSession:
    def __init__(self, plan: LocalPlan, state: StateDir, environ: Mapping[str, str]) -> None:
        self.plan = plan
        self.state = state
        self.environ = dict(environ)
        self.emulator: ManagedProcess | None = None
        self.ready: dict[str, Any] = {}
        self.apps: list[App] = []
        self.blocked: list[BlockedTask] = list(plan.blocked)

    # ------------------------------------------------------------------------------------------- start

    def start(self, stop: threading.Event) -> None:
        """Start the emulator (if needed) and every task; returns early when ``stop`` is set."""
        tasks = list(self.plan.tasks)
        if self.plan.emulator is not None:
            failure = self._start_emulator(stop)
            if failure is not None:
                needing = [t for t in tasks if t.emulator_namespaces]
                self.blocked += [
                    BlockedTask(t.namespace, t.name, t.label, reasons.EMULATOR_FAILED, failure)
                    for t in needing
                ]
                tasks = [t for t in tasks if not t.emulator_namespaces]
        if not tasks or stop.is_set():
            return
        check_replication_app()
        connections = {name: ns["connectionString"] for name, ns in self.ready.get("namespaces", {}).items()}
        for task in tasks:
            for path, content in task.files.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
            config_path = self.state.task_config(task.namespace, task.name)
            write_atomically(config_path, json.dumps(with_emulator_connections(task, connections), indent=2))
            log_path = self.state.app_log(task.namespace, task.name)
            watch = LogWatch(log_path, started_marker(task.namespace, task.name))
            argv = [
                sys.executable,
                "-m",
                "federator_spark",
                "--task-config",
                str(config_path),
                "--master",
                "local[2]",
            ]
            process = spawn(task.key, argv, self._app_environment(task), log_path)
            self.apps.append(App(task, process, watch))

    def _start_emulator(self, stop: threading.Event) -> str | None:
        """Start it and wait for its ready file; the failure message, or None once it serves (or when
        ``stop`` came first)."""
        assert self.plan.emulator is not None
        state = self.state
        ports = state.stable_ports(n.name for n in self.plan.emulator.namespaces)
        config = with_ports(self.plan.emulator, ports)
        write_atomically(
            state.emulator_config,
            yaml.safe_dump(config.model_dump(by_alias=True, mode="json"), sort_keys=False),
        )
        state.emulator_ready.unlink(missing_ok=True)  # a crashed run's file would name a dead emulator
        argv = [sys.executable, "-m", "federator_emulator", "--config", str(state.emulator_config)]
        argv += ["--data-dir", str(state.emulator_data), "--ready-file", str(state.emulator_ready)]
        self.emulator = spawn("emulator", argv, {**self.environ, "PYTHONUNBUFFERED": "1"}, state.emulator_log)
        deadline = time.monotonic() + EMULATOR_START_SECONDS
        log = f"log: {state.emulator_log}"
        while not state.emulator_ready.exists():
            code = self.emulator.exit_code()
            if code is not None:
                return f"the emulator exited with code {code}: {_last_line(state.emulator_log)} ({log})"
            if stop.is_set():
                return None
            if time.monotonic() > deadline:
                self.emulator.kill()
                return f"the emulator was not ready within {EMULATOR_START_SECONDS:.0f} s ({log})"
            time.sleep(0.1)
        self.ready = json.loads(state.emulator_ready.read_text(encoding="utf-8"))
        return None

    def _app_environment(self, task: TaskRun) -> dict[str, str]:
        settings = {**LOCAL_SPARK_CONF, **task.spark_conf}
        conf = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in sorted(settings.items()))
        python = sys.executable
        return {
            **self.environ,
            **task.secret_env,
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
            "PYSPARK_SUBMIT_ARGS": f"{conf} pyspark-shell".strip(),
            "SPARK_LOCAL_IP": self.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            "PYTHONUNBUFFERED": "1",
        }

    # ------------------------------------------------------------------------------------------- observe

    def rows(self) -> list[TaskRow]:
        rows = [blocked_row(b) for b in self.blocked]
        for app in self.apps:
            app.log.poll()
            exit_code = app.process.exit_code()
            status = read_status(self.state.status_file(app.task.namespace, app.task.name))
            rows.append(
                app_row(
                    app.task.key,
                    exit_code=exit_code,
                    stop_requested=app.process.stop_requested,
                    log=app.log,
                    status=status,
                )
            )
        return rows

    def running(self) -> bool:
        """Whether anything is left to supervise."""
        if self.apps:
            return any(a.process.exit_code() is None for a in self.apps)
        return self.emulator is not None and self.emulator.exit_code() is None

    @property
    def failed(self) -> bool:
        """A task could not run or its app ended on its own."""
        ended = any(a.process.exit_code() is not None and not a.process.stop_requested for a in self.apps)
        return bool(self.blocked) or ended or any(n.failed for n in self.plan.notes)

    def caption(self) -> list[str]:
        """Where things are: the emulator's endpoints, the state dir."""
        lines = [f"state: {self.state.root} (logs, checkpoints, status files)"]
        if self.emulator is not None:
            code = self.emulator.exit_code()
            if code is not None and not self.emulator.stop_requested:
                lines.append(f"emulator exited with code {code} (log: {self.state.emulator_log})")
            elif self.ready:
                endpoints = ", ".join(
                    f"{name} sb://{ns['amqpHost']}:{ns['amqpPort']}"
                    for name, ns in self.ready.get("namespaces", {}).items()
                )
                lines.append(f"emulator: {endpoints}; connection strings in {self.state.emulator_ready}")
        return lines

    # ------------------------------------------------------------------------------------------- stop

    def stop(self, hurry: threading.Event | None = None) -> None:
        """Apps first (they finish their batch against the emulator), then the emulator."""
        stop_all([a.process for a in self.apps], APP_GRACE_SECONDS, hurry)
        if self.emulator is not None:
            stop_all([self.emulator], EMULATOR_GRACE_SECONDS, hurry)
            self.state.emulator_ready.unlink(missing_ok=True)  # it names ports nobody serves now


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
