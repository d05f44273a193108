"""How ``./dev test`` shares the suite between its two pytest-xdist workers.

A work unit is a test file. Files marked ``jvm`` (they start a Spark JVM: an in-process session, the
replication app, local mode, a benchmark) form one lane: at most one of them runs at a time, on whichever
worker is free, because two JVMs and their Python workers on two cores slow each other past the
deadlines those tests were written for. Every other file goes to any worker.

The lane is the critical path, so a free worker takes the longest lane file when the lane is free and
otherwise the longest other file (longest first, from ``tests/durations.json``; a file never timed
counts its tests at the suite's mean), and the short files fill the end.

The controller cannot see markers (only the workers collect), so each worker writes the lane files it
collected to a file the controller names for it, before it reports its collection."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

from support import durations

LANE_MARKER = "jvm"
_LANE_FILE_KEY = "federator_lane_file"


def work_unit(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_seconds(collection: list[str], recorded: dict[str, float]) -> dict[str, float]:
    """Each unit's expected seconds: its tests' recorded durations, the mean for a test never timed."""
    mean = sum(recorded.values()) / len(recorded) if recorded else 1.0
    seconds: dict[str, float] = {}
    for nodeid in collection:
        unit = work_unit(nodeid)
        seconds[unit] = seconds.get(unit, 0.0) + recorded.get(nodeid, mean)
    return seconds


def lane_first_order(seconds: dict[str, float], lane: set[str]) -> list[str]:
    """Units longest first, the lane's before the others at equal length."""
    return sorted(seconds, key=lambda unit: (-seconds[unit], unit not in lane, unit))


class LaneScheduling(LoadScopeScheduling):
    """xdist's file-by-file scheduling with the JVM lane and longest-first order."""

    def __init__(self, config: pytest.Config, log: Any, lane_files: list[Path]) -> None:
        super().__init__(config, log)
        self.lane_files = lane_files
        self.lane: set[str] = set()
        self.rank: dict[str, int] = {}

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)

    def schedule(self) -> None:
        if self.collection is None and self.collection_is_completed:
            self.lane = set().union(*(json.loads(path.read_text()) for path in self.lane_files))
            collection = next(iter(self.registered_collections.values()))
            order = lane_first_order(unit_seconds(collection, durations.load()), self.lane)
            self.rank = {unit: rank for rank, unit in enumerate(order)}
        super().schedule()

    def _lane_busy_elsewhere(self, node: WorkerController) -> bool:
        return any(
            other is not node and unit in self.lane and not all(tests.values())
            for other, assigned in self.assigned_work.items()
            for unit, tests in assigned.items()
        )

    def _next_unit(self, node: WorkerController) -> str | None:
        blocked = self._lane_busy_elsewhere(node)
        allowed = (unit for unit in self.workqueue if not (blocked and unit in self.lane))
        runnable = sorted(allowed, key=self.rank.__getitem__)
        lane_units = [unit for unit in runnable if unit in self.lane]
        return (lane_units or runnable or [None])[0]

    def _assign_work_unit(self, node: WorkerController) -> None:
        unit = self._next_unit(node)
        if unit is None:
            return  # the lane is busy on the other worker: this one waits for the next completion
        self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) <= 2:
            self._assign_work_unit(node)

    def mark_test_complete(self, node: WorkerController, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        self.assigned_work[node][self._split_scope(nodeid)][nodeid] = True
        for each in self.nodes:  # a worker waiting for the lane may go on now
            self._reschedule(each)


class LaneReporting:
    """The controller's side: a lane file per worker, and the scheduler that reads them."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="federator-lanes-"))
        self.lane_files: list[Path] = []

    def pytest_configure_node(self, node: WorkerController) -> None:
        path = self.directory / f"{node.gateway.id}.json"
        node.workerinput[_LANE_FILE_KEY] = str(path)
        self.lane_files.append(path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> LaneScheduling:
        return LaneScheduling(config, log, self.lane_files)

    def pytest_sessionfinish(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker sends its collection to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is None or _LANE_FILE_KEY not in workerinput:
        return
    lane = sorted({work_unit(item.nodeid) for item in session.items if item.get_closest_marker(LANE_MARKER)})
    Path(workerinput[_LANE_FILE_KEY]).write_text(json.dumps(lane))


def pytest_configure(config: pytest.Config) -> None:
    is_controller = not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"
    if is_controller:
        config.pluginmanager.register(LaneReporting(), "federator-lanes")
