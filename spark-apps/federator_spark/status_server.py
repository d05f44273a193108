"""The metrics and status endpoint of a driver that runs several tasks (``federator_spark.host``): one
HTTP server for the tasks that share its port (in a cluster every member of the application: one port per
pod), serving

* ``/metrics``: every task's series, labelled ``namespace`` and ``task``;
* ``/tasks/<namespace>/<task>/status``: that task's status document, the shape a single-task driver
  serves at ``/status`` (``federator_contract.driverstatus.task_status_path``);
* ``/status``: the tasks with their state, and the task configs the driver cannot run, each named by its
  source (file or ConfigMap) with the error.

The host publishes what it runs after every pass (:meth:`ApplicationServer.publish`); a request reads
the last publication, never the host's own objects, so it needs no lock of the host's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from federator_contract.driverstatus import STATUS_PATH, task_status_path
from federator_spark import metrics


@dataclass(frozen=True)
class TaskEntry:
    """A task as ``/status`` lists it; ``status_file``: where its counts are (None: no endpoint data)."""

    namespace: str
    name: str
    state: str
    reason: str
    message: str | None = None
    status_file: str | None = None

    def listed(self) -> dict[str, Any]:
        entry = {"namespace": self.namespace, "name": self.name, "state": self.state, "reason": self.reason}
        return entry if self.message is None else {**entry, "message": self.message}


@dataclass(frozen=True)
class InvalidConfig:
    """A task config the driver cannot run: its source, why, and the task it last held (if any)."""

    source: str
    reason: str
    message: str
    task: str | None = None

    def listed(self) -> dict[str, Any]:
        entry = {"source": self.source, "reason": self.reason, "message": self.message}
        return entry if self.task is None else {**entry, "task": self.task}


class ApplicationServer:
    """One port's endpoint; :meth:`close` frees the port."""

    def __init__(self, port: int) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, TaskEntry] = {}
        self._invalid: tuple[InvalidConfig, ...] = ()
        self.server = metrics.http_server(port, metrics.StatusCollector(self._members), self.document)

    @property
    def port(self) -> int:
        port: int = self.server.server_port
        return port

    def publish(self, tasks: Mapping[str, TaskEntry], invalid: Iterable[InvalidConfig]) -> None:
        """What the port serves from now on (a task not among ``tasks`` is gone from it)."""
        by_path = {task_status_path(t.namespace, t.name): t for t in tasks.values()}
        with self._lock:
            self._tasks, self._invalid = by_path, tuple(invalid)

    def document(self, path: str) -> dict[str, Any] | None:
        with self._lock:
            tasks, invalid = self._tasks, self._invalid
        if path == STATUS_PATH:
            listed = [task.listed() for task in sorted(tasks.values(), key=lambda t: (t.namespace, t.name))]
            return {"tasks": listed, "invalidConfigs": [config.listed() for config in invalid]}
        task = tasks.get(path)
        if task is None:
            return None
        return metrics.driver_status(task.status_file) if task.status_file else {}

    def _members(self) -> list[metrics.Member]:
        with self._lock:
            tasks = list(self._tasks.values())
        return [(t.status_file, t.namespace, t.name) for t in tasks if t.status_file is not None]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
