"""What each task of a local run is doing: its process, its log and the status file its app writes after
every batch, turned into the conditions a cluster would show (Ready / Reconciling / Stalled + reason)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from federator import reasons
from federator.local.plan import BlockedTask

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
    last_batch: str | None = None


class LogWatch:
    """Follows an app's log as it grows: whether its streaming query started, and its last exception."""

    def __init__(self, path: Path, started_marker: str) -> None:
        self.path = path
        self.marker = started_marker
        self.started = False
        self.last_error: str | None = None
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
            if match := _EXCEPTION.match(line.strip()):
                self.last_error = f"{match.group(1)}: {match.group(2)}"


def started_marker(namespace: str, name: str) -> str:
    """What the replication app logs once its streaming query runs (`federator_spark.pipeline.start`)."""
    return f"task {namespace}/{name} started (query "


def read_status(path: Path) -> dict[str, Any]:
    """The app's status file (`federator_spark.metrics`); empty before its first batch."""
    try:
        status: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return status


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
    targets = (status.get("targets") or {}).values()
    figures: dict[str, Any] = {
        "replicated": sum(int(t.get("eventsOut", 0)) for t in targets) if status else None,
        "dead_lettered": sum(int(t.get("deadLettered", 0)) for t in targets) if status else None,
        "lag_seconds": status.get("replicationLagSeconds"),
        "last_batch": status.get("lastBatchTime"),
    }
    if exit_code is None and log.started:
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
