"""The processes of one local plan: the emulator (when a task points at it), the controllers of mirrors
and failover groups (local/controller.py), and the Spark applications of the tasks (local/apps.py: one
per task, per mirror, per ReplicationApplication), started in that order and stopped in the reverse one.
A mirror's task starts once its pair is provisioned; a task that follows a failover group starts with the
member the group chose, and its query moves to the new one after a switch (its host goes on running); an
application that ends by itself starts again after a growing pause, as a cluster's restart policy
would."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from federator import plainyaml, reasons
from federator.local.apps import HEALTHY_SECONDS, Home, SparkApp, crash_restart_delay, home_of, launch
from federator.local.azurite import AzuriteNotFound, RunningAzurite, start_azurite
from federator.local.controller import Controller
from federator.local.emulator import with_ports
from federator.local.groups import group_row
from federator.local.mirrors import mirror_row
from federator.local.model import BlockedTask, FollowingTask, LocalPlan, TaskRun
from federator.local.observe import TaskRow, blocked_row
from federator.local.state import AZURITE_CONNECTION, StateDir
from federator.local.supervisor import ManagedProcess, spawn, stop_all
from federator.local.taskobjects import task_objects
from federator_contract.files import write_atomically

EMULATOR_START_SECONDS = 60.0
APP_GRACE_SECONDS = 30.0
"""Spark finishes the running micro-batch when asked to stop; a batch of a local task takes seconds."""
EMULATOR_GRACE_SECONDS = 10.0


class LocalEnvironmentError(RuntimeError):
    """Something local mode needs is missing on this machine (Java, PySpark, the replication app)."""


def check_replication_app() -> None:
    """Local mode runs the replication app (`python -m federator_spark`, with Spark in-process) and the
    emulator (`python -m federator_emulator`): the distributions of the `local` extra."""
    for module in ("pyspark", "federator_spark", "federator_emulator"):
        if importlib.util.find_spec(module) is None:
            raise LocalEnvironmentError(
                f"{module} is not installed: pip install 'federator[local]' (in a clone: ./dev setup)"
            )
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        raise LocalEnvironmentError("Java 17 is required for Spark: install it or set JAVA_HOME")


class LocalSession:
    def __init__(self, plan: LocalPlan, state: StateDir, environ: Mapping[str, str]) -> None:
        self.plan = plan
        self.state = state
        self.environ = dict(environ)
        self.emulator: ManagedProcess | None = None
        self.ready: dict[str, Any] = {}
        self.apps: list[SparkApp] = []
        self.blocked: list[BlockedTask] = list(plan.blocked)
        self.pending: list[TaskRun] = []
        """Tasks not started yet: a mirror's, until both members of its pair are provisioned."""
        self.following: list[FollowingTask] = []
        self.waiting: dict[str, BlockedTask] = {}
        """Following tasks that cannot run with what their groups publish now."""
        self._followed: dict[str, tuple[int, ...]] = {}
        self.wakeup = threading.Event()
        """Set when a group switched (by the controllers' thread): the supervisor reconciles at once."""
        self.controller: Controller | None = None
        self.azurite: RunningAzurite | None = None

    # ------------------------------------------------------------------------------------------- start

    def start(self, stop: threading.Event) -> None:
        """Start the emulator (if needed), the controllers and every task that can start; returns early
        when ``stop`` is set."""
        self.pending = list(self.plan.tasks)
        following = list(self.plan.following)
        if self.plan.emulator is not None:
            failure = self._start_emulator(stop)
            if failure is not None:
                needing = [t for t in self.pending if t.emulator_namespaces or t.mirror]
                cannot: list[TaskRun | FollowingTask] = [*needing, *following]
                self.blocked += [
                    BlockedTask(t.namespace, t.name, t.label, reasons.EMULATOR_FAILED, failure)
                    for t in cannot
                ]
                self.pending = [t for t in self.pending if t not in needing]
                return
        if stop.is_set():
            return
        self._start_azurite()
        if self.plan.mirrors or self.plan.groups:
            self.controller = Controller(
                self.plan.mirrors,
                self.plan.groups,
                self.state,
                self.ready,
                on_switch=self.wakeup.set,
                tasks=task_objects(self.plan.task_specs, self.state),
            )
            self.controller.start()
        self.following = following
        if self.pending or self.following:
            check_replication_app()
        self.reconcile()

    def reconcile(self) -> None:
        """Start what may start now, and restart what changed (called at every refresh)."""
        startable = [t for t in self.pending if t.mirror is None or self._pair_provisioned(t)]
        for task in startable:
            self.pending.remove(task)
        homes: dict[Home, list[TaskRun]] = {}
        for task in startable:
            homes.setdefault(home_of(task, self.state), []).append(task)
        for home, tasks in homes.items():
            if self._app_at(home) is None:
                self.apps.append(launch(tasks, self.state, self.environ, self.ready))
            else:  # a further pair became ready, or a task of the application: the host runs it too
                for task in tasks:
                    self.run_task(task, "")
        for follower in self.following:
            self._follow(follower)
        for index, app in enumerate(self.apps):
            if app.restart is not None and app.process.exit_code() is not None:
                self.apps[index] = launch(app.restart, self.state, self.environ, self.ready)
            elif app.ended_by_itself():
                self._after_failure(index, app)

    def run_task(self, task: TaskRun, why: str) -> None:
        """Run ``task`` in the application of its home: handed to its host when that runs and has what the
        task needs (only its query starts, or starts again), else by starting the application (again).
        ``why``: what changed, for the view."""
        app = self._app_at(home_of(task, self.state))
        if app is None:
            self.apps.append(launch([task], self.state, self.environ, self.ready))
        elif app.can_place(task):
            app.place(task, self.state, self.ready, why)
        else:
            tasks = [*(t for t in (app.restart or app.tasks) if t.key != task.key), task]
            self._restart(app, tasks, why or f"{task.key} joins it")

    def _app_at(self, home: Home) -> SparkApp | None:
        return next((a for a in self.apps if a.home == home), None)

    def _after_failure(self, index: int, app: SparkApp) -> None:
        """Schedule the start of an application that ended by itself; start it once its pause is over."""
        now = time.monotonic()
        if app.restart_at is None:
            healthy = now - app.process.started_at >= HEALTHY_SECONDS
            app.failures = 1 if healthy else app.failures + 1
            app.restart_at = now + crash_restart_delay(app.failures)
        elif now >= app.restart_at:
            restarted = launch(app.tasks, self.state, self.environ, self.ready)
            restarted.failures = app.failures
            self.apps[index] = restarted

    def _restart(self, app: SparkApp, tasks: list[TaskRun], why: str) -> None:
        app.restart, app.reason = tasks, f"{why}: restarting"
        app.process.terminate()  # the queries stop after their batch; the app starts again when it exits

    def _pair_provisioned(self, task: TaskRun) -> bool:
        outcomes = self.controller.outcomes.get(task.mirror or "", []) if self.controller else []
        provisioned = {o.name for o in outcomes if o.state == "Provisioned"}
        return set(task.pair) <= provisioned

    def _follow(self, task: FollowingTask) -> None:
        """Plan a following task again when a group it follows moved; move its query if its members
        changed."""
        assert self.controller is not None
        versions = tuple(self.controller.group_version(task.namespace, g) for g in task.groups)
        if self._followed.get(task.key) == versions:
            return
        self._followed[task.key] = versions
        outcome = task.replan({g: self.controller.group_object(task.namespace, g) for g in task.groups})
        if isinstance(outcome, BlockedTask):
            self.waiting[task.key] = outcome  # planned again when the group moves
            return
        self.waiting.pop(task.key, None)
        running = next((t for a in self.apps for t in (a.restart or a.tasks) if t.key == task.key), None)
        if running is None:
            self.run_task(outcome, "")
        elif outcome.followed_members != running.followed_members:
            members = ", ".join(sorted(outcome.followed_members.values()))
            self.run_task(outcome, f"a followed group switched to {members}")

    def _start_azurite(self) -> None:
        """Azurite, when a task keeps its checkpoint translation's store there; the tasks that need it
        cannot run without it."""
        needing = self.plan.azurite_tasks
        if not needing:
            return
        try:
            self.azurite = start_azurite(self.state.root / "azurite")
        except (AzuriteNotFound, RuntimeError, OSError) as error:
            waiting: list[TaskRun | FollowingTask] = [*self.pending, *self.following]
            cannot = [t for t in waiting if t.key in needing]
            self.blocked += [
                BlockedTask(t.namespace, t.name, t.label, reasons.EMULATOR_FAILED, f"Azurite: {error}")
                for t in cannot
            ]
            self.pending = [t for t in self.pending if t.key not in needing]
            self.following = [t for t in self.following if t.key not in needing]
            return
        self.ready[AZURITE_CONNECTION] = self.azurite.connection_string()
        document = {
            "connectionString": self.azurite.connection_string(),
            "blobEndpoint": self.azurite.blob_endpoint,
        }
        write_atomically(self.state.azurite_ready, json.dumps(document, indent=2) + "\n")

    def _start_emulator(self, stop: threading.Event) -> str | None:
        """Start it and wait for its ready file; the failure message, or None once it serves (or when
        ``stop`` came first)."""
        assert self.plan.emulator is not None
        state = self.state
        ports = state.stable_ports(n.name for n in self.plan.emulator.namespaces)
        config = with_ports(self.plan.emulator, ports)
        write_atomically(
            state.emulator_config,
            plainyaml.dump(config.model_dump(by_alias=True, mode="json")),
        )
        state.emulator_ready.unlink(missing_ok=True)  # a crashed run's file would name a dead emulator
        state.emulator_outages.unlink(missing_ok=True)  # an interrupted drill's outage ends with its run
        argv = [sys.executable, "-m", "federator_emulator", "--config", str(state.emulator_config)]
        argv += ["--data-dir", str(state.emulator_data), "--ready-file", str(state.emulator_ready)]
        argv += ["--outages", str(state.emulator_outages)]
        environ = {**self.environ, "PYTHONUNBUFFERED": "1"}
        self.emulator = spawn("emulator", argv, environ, state.emulator_log, records=state.processes)
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
        state.remember_ports(self.ready)
        return None

    # ------------------------------------------------------------------------------------------- observe

    def rows(self) -> list[TaskRow]:
        rows = [blocked_row(b) for b in [*self.blocked, *self.waiting.values()]]
        for app in self.apps:
            rows += app.rows(self.state)
        if self.controller is not None:
            by_key = {r.key: r for r in rows}
            for run in self.plan.mirrors:
                rows.append(mirror_row(run, self.controller.outcomes.get(run.key, []), by_key))
            rows += [group_row(loop) for loop in self.controller.groups]
        return rows

    def running(self) -> bool:
        """Whether anything is left to supervise."""
        if self.apps or self.pending or self.following:
            alive = any(
                a.process.exit_code() is None or a.restart is not None or a.restart_at is not None
                for a in self.apps
            )
            return alive or bool(self.pending) or any(f.key in self.waiting for f in self.following)
        return self.emulator is not None and self.emulator.exit_code() is None

    @property
    def failed(self) -> bool:
        """A task could not run or its app ended on its own (and waits to start again), or a mirror or group
        is stalled."""
        if any(n.failed for n in self.plan.notes) or any(a.restart_at is not None for a in self.apps):
            return True
        return any(r.condition == "Stalled" for r in self.rows())

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
        """Apps first (they finish their batch against the emulator), the controllers, then the emulator."""
        for app in self.apps:
            app.restart = None
        stop_all([a.process for a in self.apps], APP_GRACE_SECONDS, hurry)
        if self.controller is not None:
            self.controller.stop()
        if self.emulator is not None:
            stop_all([self.emulator], EMULATOR_GRACE_SECONDS, hurry)
            self.state.emulator_ready.unlink(missing_ok=True)  # it names ports nobody serves now
        if self.azurite is not None:
            self.azurite.stop()
            self.state.azurite_ready.unlink(missing_ok=True)


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
