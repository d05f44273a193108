"""The Spark applications of a local run. A task runs in an application of its own (`python -m
federator_spark`, as in a cluster), unless its query can share one: the tasks naming a
ReplicationApplication in `spec.runtime.applicationRef`, and the tasks a mirror generates, share one host
(`python -m federator_spark.host`, one query each), since every JVM costs its own background work; a
task that follows a FailoverGroup gets a host of its own, so that a switch restarts only its query.

A host watches a directory of task configs (`<application>/tasks/`, links to each member's `task.json`):
a task is added, moved to another member of its group, or removed by writing or unlinking its file, and
the host starts, restarts or stops only that task's query; the JVM goes on (`place`, `withdraw`). An
application is started again (`restart`) when what it was started with changes (a task's secrets or Spark
settings); and, as a cluster's restart policy would, when it ended by itself, after a pause that doubles
with each failure in a row (`crash_restart_delay`).

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
from federator_contract.api.replicationapplication import MEMBER_AS_A_TASK_ALONE
from federator_contract.applog import failed_marker, started_marker
from federator_contract.files import write_atomically

LOCAL_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # progress bars would fill the log file
}
PYTHON_WORKER_CONNECT_SECONDS = "120"
"""How long Spark's Python workers wait to connect back to the JVM (PySpark's default is 15 s, which a
busy laptop starting several streaming sources at once can exceed)."""


@dataclass(frozen=True)
class Home:
    """The application a task's query runs in: its name (in the view and its log's banner), the directory
    of its `app.log` and `tmp/`, and whether it is a host that watches `tasks/` there."""

    name: str
    directory: Path
    hosted: bool

    @property
    def log(self) -> Path:
        return self.directory / "app.log"

    @property
    def task_dir(self) -> Path:
        return self.directory / "tasks"


def home_of(task: TaskRun, state: StateDir) -> Home:
    """The application named in `applicationRef`; else the mirror's; else one of the task's own, a host
    when the task follows a group (unless its checkpoint translation needs the single-task app, the one
    that runs the translator)."""
    if task.application is not None:
        namespace, name = task.application.split("/", 1)
        return Home(f"application {task.application}", state.application_dir(namespace, name), True)
    if task.mirror is not None:
        namespace, name = task.mirror.split("/", 1)
        return Home(f"mirror {task.mirror}", state.mirror_dir(namespace, name), True)
    follows = bool(task.followed_members) and task.task_config.spec.checkpoint_translation is None
    return Home(task.key, state.task_dir(task.namespace, task.name), follows)


def alone(task: TaskRun, home: Home) -> bool:
    """Whether ``home`` is a host of ``task`` only (a follower's own): no other member to share with."""
    return home.hosted and task.application is None and task.mirror is None


@dataclass(frozen=True)
class TaskNeeds:
    """What an application's process must be started with for a task: its secrets (in the environment)
    and its Spark settings."""

    secret_env: Mapping[str, str]
    spark_conf: Mapping[str, str]

    @classmethod
    def of(cls, tasks: Sequence[TaskRun]) -> TaskNeeds:
        """Every task's; a mirror's tasks share their settings."""
        return cls(
            {k: v for t in tasks for k, v in t.secret_env.items()},
            {k: v for t in tasks for k, v in t.spark_conf.items()},
        )

    def __le__(self, other: TaskNeeds) -> bool:
        return self.secret_env.items() <= other.secret_env.items() and (
            self.spark_conf.items() <= other.spark_conf.items()
        )


FIRST_RESTART_SECONDS = 10.0
LONGEST_RESTART_SECONDS = 300.0
HEALTHY_SECONDS = 600.0
"""An application that ran this long before it ended starts its count of failures again."""


def crash_restart_delay(failures: int) -> float:
    """The pause before starting an application again after its ``failures``-th failure in a row."""
    return float(min(LONGEST_RESTART_SECONDS, FIRST_RESTART_SECONDS * 2 ** max(0, failures - 1)))


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
    home: Home | None = None
    started_with: TaskNeeds = field(default_factory=lambda: TaskNeeds({}, {}))
    """The secrets and Spark settings its process was started with."""
    moving: dict[str, str] = field(default_factory=dict)
    """Task key → why its query starts again in the running host (a switch), until it has started."""

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
            rows.append(self._restarting(row) if self.restart_at is not None else self._moving(task, row))
        return rows

    def _moving(self, task: TaskRun, row: TaskRow) -> TaskRow:
        """A task whose query the host starts again on another member: Reconciling until it has started
        (or failed: its own row says how)."""
        why = self.moving.get(task.key)
        if why is None or row.reason == reasons.SPARK_APPLICATION_FAILED or self.logs[task.key].started:
            self.moving.pop(task.key, None)
            return row
        message = f"{why}: its query starts again in the running application ({self.name})"
        reason = reasons.FOLLOWED_MEMBER_SWITCHING
        return replace(row, condition="Reconciling", reason=reason, message=message)

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

    def can_place(self, task: TaskRun) -> bool:
        """Whether ``task`` can run in this application without starting it again: it is a running host,
        started with every secret and Spark setting the task needs."""
        running = self.restart is None and self.restart_at is None and self.process.exit_code() is None
        hosted = self.home is not None and self.home.hosted
        return running and hosted and TaskNeeds.of([task]) <= self.started_with

    def place(self, task: TaskRun, state: StateDir, ready: Mapping[str, Any], why: str = "") -> None:
        """Hand ``task`` to the running host: its config is written (atomically, so the host never reads
        half a file) and linked into the watched directory; the host starts, or restarts, only its query.
        ``why``: the row says it while the query starts again (a switch)."""
        assert self.home is not None
        self.logs[task.key] = _log_watch(self.home, task)  # before the file: its start is not missed
        _link(self.home, task, write_task_files(task, state, ready))
        self.tasks = [*(t for t in self.tasks if t.key != task.key), task]
        if why:
            self.moving[task.key] = why


def launch(
    tasks: Sequence[TaskRun], state: StateDir, environ: Mapping[str, str], ready: Mapping[str, Any]
) -> SparkApp:
    """Write the tasks' files and start the application that runs them (all of one home)."""
    home = home_of(tasks[0], state)
    configs = [write_task_files(task, state, ready) for task in tasks]
    if home.hosted:
        shutil.rmtree(home.task_dir, ignore_errors=True)  # the last run's members are not this run's
        for task, config in zip(tasks, configs, strict=True):
            _link(home, task, config)
        argv = [sys.executable, "-m", "federator_spark.host", "--task-dir", str(home.task_dir)]
    else:
        argv = [sys.executable, "-m", "federator_spark", "--task-config", str(configs[0])]
    logs = {t.key: _log_watch(home, t) for t in tasks}
    temporary = home.directory / "tmp"
    shutil.rmtree(temporary, ignore_errors=True)  # a killed run's leftovers
    temporary.mkdir(parents=True)
    environment = app_environment(tasks, environ, temporary, alone=alone(tasks[0], home))
    argv += ["--master", "local[2]"]
    process = spawn(home.name, argv, environment, home.log, records=state.processes)
    return SparkApp(home.name, process, list(tasks), logs, home=home, started_with=TaskNeeds.of(tasks))


def write_task_files(task: TaskRun, state: StateDir, ready: Mapping[str, Any]) -> Path:
    """The task's ConfigMap files and its config (with the emulator's connection files); the config's
    path."""
    connections = write_emulator_connections(state, ready)
    blob = ready.get(AZURITE_CONNECTION)
    blob_file = _owner_only(state.azurite_connection_file, blob) if blob else None
    for path, content in task.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    config_path = state.task_config(task.namespace, task.name)
    write_atomically(config_path, with_emulator_connections(task, connections, blob_file).to_json())
    return config_path


def _link(home: Home, task: TaskRun, config: Path) -> None:
    """The config in the host's watched directory: a link to it, replaced atomically (the host reads
    through it, and a rewrite of the config itself is a new file it sees changed)."""
    # `_` is in no Kubernetes name: two tasks' links never clash.
    link = home.task_dir / f"{task.namespace}_{task.name}.json"
    home.task_dir.mkdir(parents=True, exist_ok=True)
    staged = link.with_name(f".{link.name}.new")  # a dot-entry: never read as a config
    staged.unlink(missing_ok=True)
    staged.symlink_to(config.resolve())
    staged.replace(link)


def _log_watch(home: Home, task: TaskRun) -> LogWatch:
    """The task's watch on its application's log, from its current end; in a host's log, the task's own
    failures are marked."""
    failed = failed_marker(task.namespace, task.name) if home.hosted else None
    return LogWatch(home.log, started_marker(task.namespace, task.name), failed)


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


def app_environment(
    tasks: Sequence[TaskRun], environ: Mapping[str, str], temporary: Path, *, alone: bool = False
) -> dict[str, str]:
    """The tasks' secrets, their Spark settings (a mirror's or an application's tasks share theirs),
    Python for PySpark, and ``temporary`` for every temporary file (the JVM's, Spark's and Python's).
    ``alone``: a host of one task, whose batches are not bounded for others (the task's own settings
    may still say otherwise)."""
    needs = TaskNeeds.of(tasks)
    settings = {
        **LOCAL_SPARK_CONF,
        "spark.local.dir": str(temporary),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={temporary}",
        **(MEMBER_AS_A_TASK_ALONE if alone else {}),
        **needs.spark_conf,
    }
    conf = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in sorted(settings.items()))
    python = sys.executable
    return {
        **environ,
        **needs.secret_env,
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PYSPARK_SUBMIT_ARGS": f"{conf} pyspark-shell".strip(),
        "SPARK_LOCAL_IP": environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "SPARK_AUTH_SOCKET_TIMEOUT": environ.get("SPARK_AUTH_SOCKET_TIMEOUT", PYTHON_WORKER_CONNECT_SECONDS),
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(temporary),
    }
