"""The split of the suite between two workers (support/suite_split.py): the JVM lane runs on one worker at
a time while other files are left, the longest files start first, and once only lane files are left (the
tail), a free worker takes the next of them beside the one running instead of waiting."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from support.suite_split import LaneScheduling, lane_first_order, split_summary, unit_seconds


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
    "tests/a/test_jvm_long.py::test_3",
    "tests/a/test_jvm_short.py::test_1",
    "tests/b/test_quick.py::test_1",
    "tests/b/test_quick.py::test_2",
    "tests/b/test_medium.py::test_1",
]
RECORDED = {
    "tests/a/test_jvm_long.py::test_1": 100.0,
    "tests/a/test_jvm_long.py::test_2": 100.0,
    "tests/a/test_jvm_long.py::test_3": 100.0,
    "tests/a/test_jvm_short.py::test_1": 50.0,
    "tests/b/test_quick.py::test_1": 1.0,
    "tests/b/test_quick.py::test_2": 1.0,
}
LANE = {"tests/a/test_jvm_long.py", "tests/a/test_jvm_short.py"}


def test_a_file_takes_its_tests_recorded_seconds_and_the_mean_for_a_test_never_timed() -> None:
    seconds = unit_seconds(COLLECTION, RECORDED)
    assert seconds["tests/a/test_jvm_long.py"] == 300.0
    assert seconds["tests/b/test_medium.py"] == sum(RECORDED.values()) / len(RECORDED)


def test_files_go_longest_first_and_the_lanes_first_at_equal_length() -> None:
    order = lane_first_order({"x.py": 5.0, "lane.py": 5.0, "long.py": 9.0}, {"lane.py"})
    assert order == ["long.py", "lane.py", "x.py"]


@dataclass
class Workers:
    """What the scheduler reads of pytest's config under ``-n <count>``."""

    count: int
    option: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(loadscopereorder=False))

    def getvalue(self, name: str) -> Any:
        return {"tx": [f"{self.count}*popen"]}[name]


def make_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, lane: set[str], recorded: dict[str, float]
) -> Any:
    lane_file = tmp_path / "gw0.json"
    lane_file.write_text(json.dumps(sorted(lane)))
    monkeypatch.setattr("support.durations.load", lambda: recorded)
    return LaneScheduling(Workers(workers), None, [lane_file])


@pytest.fixture
def scheduler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return make_scheduler(tmp_path, monkeypatch, 2, LANE, RECORDED)


def start(sched: Any, *nodes: Node, collection: list[str] = COLLECTION) -> None:
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()


def running_lane_units(sched: Any, lane: set[str] = LANE) -> dict[str, list[str]]:
    return {
        node.name: [unit for unit, tests in work.items() if unit in lane and not all(tests.values())]
        for node, work in sched.assigned_work.items()
    }


def complete(sched: Any, node: Node, unit: str, collection: list[str] = COLLECTION) -> None:
    for nodeid in [n for n in collection if n.startswith(unit)]:
        sched.mark_test_complete(node, collection.index(nodeid))


def test_the_lane_runs_on_one_worker_at_a_time_and_the_other_takes_the_rest(scheduler: Any) -> None:
    one, two = Node("gw0"), Node("gw1")
    start(scheduler, one, two)

    lanes = running_lane_units(scheduler)
    assert lanes["gw0"][0] == "tests/a/test_jvm_long.py"  # the longest file starts at once
    assert lanes["gw1"] == []  # the lane's next file queues behind it on the same worker, if anywhere
    assert set(scheduler.assigned_work[two]) == {"tests/b/test_quick.py", "tests/b/test_medium.py"}


def test_a_worker_with_only_lane_files_left_takes_the_next_beside_the_running_one(scheduler: Any) -> None:
    one, two = Node("gw0"), Node("gw1")
    start(scheduler, one, two)
    assert scheduler.tail_began is None  # other files were left for the second worker

    for unit in list(scheduler.assigned_work[two]):
        complete(scheduler, two, unit)

    lanes = running_lane_units(scheduler)
    assert lanes == {"gw0": ["tests/a/test_jvm_long.py"], "gw1": ["tests/a/test_jvm_short.py"]}
    assert scheduler.tail_began is not None
    assert not scheduler.workqueue  # every file was handed out


def test_the_summary_says_when_each_worker_finished_and_when_the_tail_began() -> None:
    line = split_summary(100.0, {"gw1": 1290.4, "gw0": 1180.0}, 1010.0)
    assert line == (
        "split: workers finished gw0 at 1080 s, gw1 at 1190 s; two lane files at once (the tail) from 910 s"
    )
    assert split_summary(100.0, {}, None).endswith("(none); two lane files at once (the tail) none")


# Three lane files and one other, for three workers.
TAIL_LANE = {"tests/a/test_jvm_long.py", "tests/a/test_jvm_mid.py", "tests/a/test_jvm_short.py"}
TAIL_RECORDED = {
    **{f"tests/a/test_jvm_long.py::test_{i}": 100.0 for i in range(3)},
    **{f"tests/a/test_jvm_mid.py::test_{i}": 60.0 for i in range(3)},
    "tests/a/test_jvm_short.py::test_1": 50.0,
    "tests/b/test_quick.py::test_1": 1.0,
    "tests/b/test_quick.py::test_2": 1.0,
}
TAIL_COLLECTION = list(TAIL_RECORDED)


def test_in_the_tail_a_third_worker_waits_while_two_lane_files_run(tmp_path, monkeypatch) -> None:
    sched = make_scheduler(tmp_path, monkeypatch, 3, TAIL_LANE, TAIL_RECORDED)
    one, two, three = Node("gw0"), Node("gw1"), Node("gw2")
    start(sched, one, two, three, collection=TAIL_COLLECTION)

    running = running_lane_units(sched, TAIL_LANE)
    assert running == {"gw0": ["tests/a/test_jvm_long.py"], "gw1": [], "gw2": ["tests/a/test_jvm_mid.py"]}
    assert list(sched.workqueue) == ["tests/a/test_jvm_short.py"]  # gw1 has the other file, then waits

    complete(sched, three, "tests/a/test_jvm_mid.py", collection=TAIL_COLLECTION)

    holders = [name for name, units in running_lane_units(sched, TAIL_LANE).items() if units]
    assert len(holders) == 2 and "gw0" in holders  # the short file took the freed place, beside the long one
    assert not sched.workqueue
