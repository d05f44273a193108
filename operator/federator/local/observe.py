"""What each task of a local run is doing: its process, its log and the status file its app writes after
every batch, turned into the conditions a cluster would show (Ready / Reconciling / Stalled + reason)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from federator import reasons
from federator.local.model import BlockedTask
from federator.status import conditions as cond
from federator_contract import appstatus
from federator_contract.api.replicationtask import ReplicationTaskStatus
from federator_contract.driverstatus import task_status_fields

Condition = Literal["Ready", "Reconciling", "Stalled"]

# A Python exception's last traceback line, e.g. `federator_spark.config.TaskConfigError: ...`.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception)): (.+)$")


@dataclass(frozen=True)
class TaskRow:
    """One line of the live view."""

    key: str
    condition: Condition
    reason: str
    message: str = ""
    replicated: int | None = None
    dead_lettered: int | None = None
    lag_seconds: float | None = None
    last_batch: datetime | None = None
    info: str = ""
    """Shown under the table whatever the condition (mirrors: members and pairs; groups: members)."""


class LogWatch:
    """Follows an app's log as it grows: whether its streaming query started, and its last exception. In a
    log several tasks share (`federator_spark.host`), ``failed_marker`` says that this task's query failed."""

    def __init__(self, path: Path, started_marker: str, failed_marker: str | None = None) -> None:
        self.path = path
        self.marker = started_marker
        self.failed_marker = failed_marker
        self.started = False
        self.last_error: str | None = None
        self.failure: str | None = None
        self._offset = path.stat().st_size if path.exists() else 0
        self._partial = ""

    def poll(self) -> None:
        try:
            with self.path.open("rb") as log:
                log.seek(self._offset)
                chunk = log.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        lines = (self._partial + chunk.decode("utf-8", errors="replace")).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if self.marker in line:
                self.started = True
                self.failure = None  # the shared application started the failed query again
            if self.failed_marker and self.failed_marker in line:
                self.failure = line.split(self.failed_marker, 1)[1].strip()
            if match := _EXCEPTION.match(line.strip()):
                self.last_error = f"{match.group(1)}: {match.group(2)}"


def read_status(path: Path) -> dict[str, Any]:
    """The app's status file with the outages its processes report (`federator_contract.appstatus`); empty
    before its first batch."""
    return appstatus.read_status(path)


def blocked_row(task: BlockedTask) -> TaskRow:
    return TaskRow(task.key, "Stalled", task.reason, task.message)


def app_row(
    key: str,
    *,
    exit_code: int | None,
    stop_requested: bool,
    log: LogWatch,
    status: dict[str, Any],
) -> TaskRow:
    """The condition of a task whose app was started, from its process, log and status file."""
    report = ReplicationTaskStatus.model_validate(task_status_fields(status))
    figures: dict[str, Any] = {
        "replicated": report.events_replicated,
        "dead_lettered": report.events_dead_lettered,
        "lag_seconds": report.replication_lag_seconds,
        "last_batch": report.last_batch_time,
    }
    refused = [o for o in status.get("unavailable", []) if o["reason"] in appstatus.REFUSED.values()]
    if refused and (exit_code is not None or log.failure is not None):
        outage = refused[0]
        message = f"{outage['role']} {outage['endpoint']}: {outage['message']} (log: {log.path})"
        return TaskRow(key, "Stalled", outage["reason"], message, **figures)
    if log.failure is not None:
        message = f"its query failed: {log.failure} (log: {log.path})"
        return TaskRow(key, "Stalled", reasons.SPARK_APPLICATION_FAILED, message, **figures)
    if exit_code is None and log.started:
        for outage in status.get("unavailable", []):  # retried by the app: the lag grows meanwhile
            since = time.time() - float(outage["since"])
            message = f"{outage['role']} {outage['endpoint']} for {since:.0f} s: {outage['message']}"
            return TaskRow(key, "Reconciling", outage["reason"], message, **figures)
        return TaskRow(key, "Ready", reasons.RUNNING, "the streaming query runs", **figures)
    if exit_code is None:
        return TaskRow(
            key,
            "Reconciling",
            reasons.SPARK_APPLICATION_PENDING,
            f"Spark is starting (log: {log.path})",
            **figures,
        )
    if stop_requested:
        return TaskRow(
            key, "Reconciling", reasons.SPARK_APPLICATION_STOPPED, "stopped by federator", **figures
        )
    detail = log.last_error or "see the log"
    message = f"the app exited with code {exit_code}: {detail} (log: {log.path})"
    return TaskRow(key, "Stalled", reasons.SPARK_APPLICATION_FAILED, message, **figures)


def triad_row(key: str, updates: Sequence[cond.ConditionUpdate], info: str = "", **figures: Any) -> TaskRow:
    """A row from a resource's kstatus triad (Ready / Reconciling / Stalled, one of them True)."""
    current = next(u for u in updates if u.type in _TRIAD and u.status == "True")
    return TaskRow(key, _TRIAD[current.type], current.reason, current.message, info=info, **figures)


_TRIAD: dict[str, Condition] = {cond.READY: "Ready", cond.RECONCILING: "Reconciling", cond.STALLED: "Stalled"}


def task_conditions(row: TaskRow) -> dict[str, Any]:
    """A task's row as the status conditions a cluster would hold (what a mirror's roll-up reads)."""
    updates = {"Ready": cond.ready, "Reconciling": cond.reconciling, "Stalled": cond.stalled}[row.condition](
        row.reason, row.message
    )
    return {
        "status": {
            "conditions": [
                {"type": u.type, "status": u.status, "reason": u.reason, "message": u.message}
                for u in updates
            ]
        }
    }
