"""The split of the suite between two workers (support/suite_split.py): the JVM lane never runs on two
workers at once, the longest files start first, and a worker the lane keeps waiting goes on with other
files, then takes the lane when it frees."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from support.suite_split import LaneScheduling, lane_first_order, unit_seconds


@dataclass(eq=False)
class Gateway:
    id: str


@dataclass(eq=False)
class Node:
    """What the scheduler uses of xdist's WorkerController."""

    name: str
    sent: list[list[int]] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> Gateway:
        return Gateway(self.name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "tests/a/test_jvm_long.py::test_1",
    "tests/a/test_jvm_long.py::test_2",
    "tests/a/test_jvm_short.py::test_1",
    "tests/b/test_quick.py::test_1",
    "tests/b/test_quick.py::test_2",
    "tests/b/test_medium.py::test_1",
]
RECORDED = {
    "tests/a/test_jvm_long.py::test_1": 100.0,
    "tests/a/test_jvm_long.py::test_2": 100.0,
    "tests/a/test_jvm_short.py::test_1": 50.0,
    "tests/b/test_quick.py::test_1": 1.0,
    "tests/b/test_quick.py::test_2": 1.0,
}
LANE = {"tests/a/test_jvm_long.py", "tests/a/test_jvm_short.py"}


def test_a_file_takes_its_tests_recorded_seconds_and_the_mean_for_a_test_never_timed() -> None:
    seconds = unit_seconds(COLLECTION, RECORDED)
    assert seconds["tests/a/test_jvm_long.py"] == 200.0
    assert seconds["tests/b/test_medium.py"] == sum(RECORDED.values()) / len(RECORDED)


def test_files_go_longest_first_and_the_lanes_first_at_equal_length() -> None:
    order = lane_first_order({"x.py": 5.0, "lane.py": 5.0, "long.py": 9.0}, {"lane.py"})
    assert order == ["long.py", "lane.py", "x.py"]


class TwoWorkers:
    """What the scheduler reads of pytest's config under ``-n 2``."""

    option = SimpleNamespace(loadscopereorder=False)

    def getvalue(self, name: str) -> Any:
        return {"tx": ["2*popen"]}[name]


@pytest.fixture
def scheduler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    lane_file = tmp_path / "gw0.json"
    lane_file.write_text(json.dumps(sorted(LANE)))
    monkeypatch.setattr("support.durations.load", lambda: RECORDED)
    return LaneScheduling(TwoWorkers(), None, [lane_file])


def start(sched: Any, *nodes: Node) -> None:
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, COLLECTION)
    sched.schedule()


def running_lane_units(sched: Any) -> dict[str, list[str]]:
    return {
        node.name: [unit for unit, tests in work.items() if unit in LANE and not all(tests.values())]
        for node, work in sched.assigned_work.items()
    }


def complete(sched: Any, node: Node, unit: str) -> None:
    for nodeid in [n for n in COLLECTION if n.startswith(unit)]:
        sched.mark_test_complete(node, COLLECTION.index(nodeid))


def test_the_lane_runs_on_one_worker_at_a_time_and_the_other_takes_the_rest(scheduler: Any) -> None:
    one, two = Node("gw0"), Node("gw1")
    start(scheduler, one, two)

    lanes = running_lane_units(scheduler)
    assert lanes["gw0"][0] == "tests/a/test_jvm_long.py"  # the longest file starts at once
    assert lanes["gw1"] == []  # the lane's next file queues behind it on the same worker, if anywhere
    assert set(scheduler.assigned_work[two]) == {"tests/b/test_quick.py", "tests/b/test_medium.py"}


def test_a_worker_kept_waiting_by_the_lane_takes_it_when_it_frees(scheduler: Any) -> None:
    one, two = Node("gw0"), Node("gw1")
    start(scheduler, one, two)
    for unit in list(scheduler.assigned_work[two]):
        complete(scheduler, two, unit)
    assert not two.shutting_down or not scheduler.workqueue  # waiting, not shut down, while work is left

    complete(scheduler, one, "tests/a/test_jvm_long.py")

    holders = [name for name, units in running_lane_units(scheduler).items() if units]
    assert len(holders) <= 1
    assert not scheduler.workqueue  # every file was handed out
