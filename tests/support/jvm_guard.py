"""The JVM lane's marker, kept true: while a test runs, its worker's descendants are looked at once a
second, and a test during which a new ``java`` process appeared must carry the ``jvm`` marker (its file
then runs in the lane, ``support/suite_split.py``), or it fails saying so. A test that uses the
in-process Spark session (the ``spark`` fixture) is marked by that alone.

A JVM alive for less than a second can slip by; none of Spark's does."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from support.suite_split import LANE_MARKER

INTERVAL_SECONDS = 1.0


def java_descendants(root: int) -> set[int]:
    """The ``java`` processes among ``root``'s descendants, from /proc (one read per process)."""
    children: dict[int, list[int]] = {}
    names: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue  # gone meanwhile
        end = stat.rindex(b")")
        pid, parent = int(entry.name), int(stat[end + 2 :].split()[1])
        children.setdefault(parent, []).append(pid)
        names[pid] = stat[stat.index(b"(") + 1 : end]
    found, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if names.get(child) == b"java":
                found.add(child)
    return found


class JvmWatch(threading.Thread):
    """The JVMs that appear under this process while it runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True, name="jvm-watch")
        self.before = java_descendants(os.getpid())
        self.started: set[int] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(INTERVAL_SECONDS):
            self.look()

    def look(self) -> None:
        self.started |= java_descendants(os.getpid()) - self.before

    def stop(self) -> set[int]:
        self.done.set()
        self.join()
        self.look()
        return self.started


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(LANE_MARKER)


WATCH = pytest.StashKey[JvmWatch]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not item.get_closest_marker(LANE_MARKER) and Path("/proc/self/stat").exists():
        item.stash[WATCH] = JvmWatch()
        item.stash[WATCH].start()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Fails the test's teardown (so the run) when it started a JVM outside the lane."""
    watch = item.stash.get(WATCH, None)
    if watch is not None and (started := watch.stop()):
        pytest.fail(
            f"{item.nodeid} started a JVM ({len(started)} java process(es)) without the `{LANE_MARKER}` "
            "marker: mark its file, so that it runs in the JVM lane (tests/support/suite_split.py)",
            pytrace=False,
        )
