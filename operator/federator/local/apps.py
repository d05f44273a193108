"""The Spark applications of a local run. A task runs in an application of its own (`python -m
federator_spark`, as in a cluster), except the tasks a mirror generates: they share one application
(`python -m federator_spark.host`, one query each), since every JVM costs its own background work
and a mirror's tasks share their settings. An application is started again (`restart`) when its tasks
change: a followed group switched, or a mirror's further pair became ready; and, as a cluster's restart
policy would, when it ended by itself, after a pause that doubles with each failure in a row
(`crash_restart_delay`).

Spark's and Python's temporary files (`spark-*`, `blockmgr-*`, `artifacts-*`, `liblz4-java-*.so`) go to
the application's own `tmp/` beside its log, emptied before each start: nothing of a run is left in
`/tmp`, even after a kill."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from federator import reasons
from federator.local.model import TaskRun
from federator.local.observe import LogWatch, TaskRow, app_row, read_status
from federator.local.plan import with_emulator_connections
from federator.local.state import AZURITE_CONNECTION, StateDir
from federator.local.supervisor import ManagedProcess, spawn
from federator_contract.applog import failed_marker, started_marker
from federator_contract.files import write_atomically

LOCAL_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # progress bars would fill the log file
}
PYTHON_WORKER_CONNECT_SECONDS = "120"
"""How long Spark's Python workers wait to connect back to the JVM (PySpark's default is 15 s, which a
busy laptop starting several streaming sources at once can exceed)."""


@dataclass
class SparkApp:
    """One Spark application process and the tasks whose queries it runs."""

    name: str
    process: ManagedProcess
    tasks: list[TaskRun]
    logs: dict[str, LogWatch]
    """Task key → its watch on the application's log."""
    restart: list[TaskRun] | None = None
    """Started once the process has stopped: the tasks planned again."""
    reason: str = field(default="")
    """Why it restarts, for the view."""
    failures: int = 0
    """Times in a row it ended by itself (the restart before this one included)."""
    restart_at: float | None = None
    """It ended by itself: when (time.monotonic()) it starts again."""

    def rows(self, state: StateDir) -> list[TaskRow]:
        rows = []
        for task in self.tasks:
            log = self.logs[task.key]
            log.poll()
            if self.restart is not None:
                rows.append(
                    TaskRow(task.key, "Reconciling", reasons.SPARK_APPLICATION_RESTARTING, self.reason)
                )
                continue
            row = app_row(
                task.key,
                exit_code=self.process.exit_code(),
                stop_requested=self.process.stop_requested,
                log=log,
                status=read_status(state.status_file(task.namespace, task.name)),
            )
            rows.append(self._restarting(row) if self.restart_at is not None else row)
        return rows

    def _restarting(self, failed: TaskRow) -> TaskRow:
        """A failed task's row while its application waits to start again: still Stalled when it was
        refused (a human must act), else restarting."""
        assert self.restart_at is not None
        pause = max(0.0, self.restart_at - time.monotonic())
        message = f"{failed.message}; starting again in {pause:.0f} s (failure {self.failures} in a row)"
        if failed.condition == "Stalled" and failed.reason != reasons.SPARK_APPLICATION_FAILED:
            return replace(failed, message=message)
        return replace(
            failed, condition="Reconciling", reason=reasons.SPARK_APPLICATION_RESTARTING, message=message
        )

    def ended_by_itself(self) -> bool:
        return (
            self.restart is None and not self.process.stop_requested and self.process.exit_code() is not None
        )


FIRST_RESTART_SECONDS = 10.0
LONGEST_RESTART_SECONDS = 300.0
HEALTHY_SECONDS = 600.0
"""An application that ran this long before it ended starts its count of failures again."""


def crash_restart_delay(failures: int) -> float:
    """The pause before starting an application again after its ``failures``-th failure in a row."""
    return float(min(LONGEST_RESTART_SECONDS, FIRST_RESTART_SECONDS * 2 ** max(0, failures - 1)))


def launch(
    tasks: Sequence[TaskRun], state: StateDir, environ: Mapping[str, str], ready: Mapping[str, Any]
) -> SparkApp:
    """Write the tasks' files and start the application that runs them."""
    connections = write_emulator_connections(state, ready)
    blob = ready.get(AZURITE_CONNECTION)
    blob_file = _owner_only(state.azurite_connection_file, blob) if blob else None
    configs: list[Path] = []
    for task in tasks:
        for path, content in task.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        config_path = state.task_config(task.namespace, task.name)
        config = with_emulator_connections(task, connections, blob_file)
        write_atomically(config_path, config.to_json())
        configs.append(config_path)
    first = tasks[0]
    if first.mirror is None:
        name, log_path = first.key, state.app_log(first.namespace, first.name)
        argv = [sys.executable, "-m", "federator_spark", "--task-config", str(configs[0])]
    else:
        namespace, mirror = first.mirror.split("/", 1)
        name, log_path = f"mirror {first.mirror}", state.mirror_dir(namespace, mirror) / "app.log"
        argv = [sys.executable, "-m", "federator_spark.host"]
        argv += [arg for path in configs for arg in ("--task-config", str(path))]
    shared = first.mirror is not None
    logs = {
        t.key: LogWatch(
            log_path,
            started_marker(t.namespace, t.name),
            failed_marker(t.namespace, t.name) if shared else None,
        )
        for t in tasks
    }
    temporary = log_path.parent / "tmp"
    shutil.rmtree(temporary, ignore_errors=True)  # a killed run's leftovers
    temporary.mkdir(parents=True)
    environment = app_environment(tasks, environ, temporary)
    process = spawn(name, [*argv, "--master", "local[2]"], environment, log_path)
    return SparkApp(name, process, list(tasks), logs)


def write_emulator_connections(state: StateDir, ready: Mapping[str, Any]) -> dict[str, Path]:
    """Each emulator namespace's connection string in a file only its owner can read (the apps read it
    there, as a pod reads a mounted Secret); namespace → file."""
    return {
        name: _owner_only(state.emulator_connection_file(name), namespace["connectionString"])
        for name, namespace in (ready.get("namespaces") or {}).items()
    }


def _owner_only(path: Path, text: str) -> Path:
    """``text`` in ``path``, readable and writable by its owner only (from its creation on)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def app_environment(tasks: Sequence[TaskRun], environ: Mapping[str, str], temporary: Path) -> dict[str, str]:
    """The tasks' secrets, their Spark settings (a mirror's tasks share theirs), Python for PySpark, and
    ``temporary`` for every temporary file (the JVM's, Spark's and Python's)."""
    settings = {
        **LOCAL_SPARK_CONF,
        "spark.local.dir": str(temporary),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={temporary}",
        **{k: v for t in tasks for k, v in t.spark_conf.items()},
    }
    conf = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in sorted(settings.items()))
    python = sys.executable
    return {
        **environ,
        **{k: v for t in tasks for k, v in t.secret_env.items()},
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PYSPARK_SUBMIT_ARGS": f"{conf} pyspark-shell".strip(),
        "SPARK_LOCAL_IP": environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "SPARK_AUTH_SOCKET_TIMEOUT": environ.get("SPARK_AUTH_SOCKET_TIMEOUT", PYTHON_WORKER_CONNECT_SECONDS),
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(temporary),
    }
