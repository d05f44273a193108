"""How ``./dev test`` shares the suite between its pytest-xdist workers (two unless
``FEDERATOR_TEST_WORKERS`` says otherwise).

A work unit is a test file. Files marked ``jvm`` (they start a Spark JVM: an in-process session, the
replication app, local mode, a benchmark) form one lane: while other files are left, at most one of them
runs at a time, on whichever worker is free, because two JVMs and their Python workers on two cores slow
each other and the files beside them. Every other file goes to any worker.

The lane is the critical path, so a free worker takes the longest lane file when the lane is free and
otherwise the longest other file (longest first, from ``tests/durations.json``; a file never timed
counts its tests at the suite's mean), and the short files fill the end. Once nothing but lane files is
left (the tail), a free worker takes the longest of them beside the running one: two JVMs for the last
files beat a worker idle until the end. The run's summary says when each worker finished and when the
tail began, so CI's log shows how even the split was.

The controller cannot see markers (only the workers collect), so each worker writes the lane files it
collected to a file the controller names for it, before it reports its collection."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

from support import durations

LANE_MARKER = "jvm"
# Lane files at once in the tail (none other left): two JVMs share the two cores; a third worker waits.
TAIL_LANE_FILES = 2
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
        self.tail_began: float | None = None  # time.monotonic() when a second lane file was first handed out

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)

    def schedule(self) -> None:
        if self.collection is None and self.collection_is_completed:
            self.lane = set().union(*(json.loads(path.read_text()) for path in self.lane_files))
            collection = next(iter(self.registered_collections.values()))
            order = lane_first_order(unit_seconds(collection, durations.load()), self.lane)
            self.rank = {unit: rank for rank, unit in enumerate(order)}
        super().schedule()

    def _lane_workers_elsewhere(self, node: WorkerController) -> int:
        """The other workers running (or holding) a lane file not finished yet."""
        return sum(
            any(unit in self.lane and not all(tests.values()) for unit, tests in assigned.items())
            for other, assigned in self.assigned_work.items()
            if other is not node
        )

    def _next_unit(self, node: WorkerController) -> str | None:
        """The longest lane file while the lane is free, else the longest other file; when only lane
        files are left (the tail), the longest of them beside the one running, up to TAIL_LANE_FILES."""
        runnable: list[str] = sorted(self.workqueue, key=self.rank.__getitem__)
        lane_units = [unit for unit in runnable if unit in self.lane]
        others = [unit for unit in runnable if unit not in self.lane]
        lane_elsewhere = self._lane_workers_elsewhere(node)
        if lane_units and lane_elsewhere == 0:
            return lane_units[0]
        if others:
            return others[0]
        if not lane_units or lane_elsewhere >= TAIL_LANE_FILES:
            return None  # waits for the next completion
        if self.tail_began is None:
            self.tail_began = time.monotonic()
        return lane_units[0]

    def _assign_work_unit(self, node: WorkerController) -> None:
        unit = self._next_unit(node)
        if unit is None:
            return
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
    """The controller's side: a lane file per worker, the scheduler that reads them, and the summary of
    how the run went (when each worker finished, when the tail began)."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="federator-lanes-"))
        self.lane_files: list[Path] = []
        self.started = time.monotonic()
        self.finished: dict[str, float] = {}
        self.scheduler: LaneScheduling | None = None

    def pytest_configure_node(self, node: WorkerController) -> None:
        path = self.directory / f"{node.gateway.id}.json"
        node.workerinput[_LANE_FILE_KEY] = str(path)
        self.lane_files.append(path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> LaneScheduling:
        self.scheduler = LaneScheduling(config, log, self.lane_files)
        return self.scheduler

    def pytest_testnodedown(self, node: WorkerController) -> None:
        self.finished[node.gateway.id] = time.monotonic()

    def pytest_sessionfinish(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tail = self.scheduler.tail_began if self.scheduler else None
        terminalreporter.write_line(split_summary(self.started, self.finished, tail))


def split_summary(started: float, finished: dict[str, float], tail_began: float | None) -> str:
    """One line for CI's log: when each worker finished, and when nothing but lane files was left."""
    workers = ", ".join(f"{name} at {at - started:.0f} s" for name, at in sorted(finished.items()))
    tail = f"from {tail_began - started:.0f} s" if tail_began is not None else "none"
    return f"split: workers finished {workers or '(none)'}; two lane files at once (the tail) {tail}"


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
