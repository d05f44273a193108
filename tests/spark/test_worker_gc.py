"""A Python worker Spark runs for the app freezes what is alive once its modules are loaded, so a
collection walks only what tasks made since; and the collection PySpark's daemon runs after each use of a
task worker walks only the young generations, not what the worker keeps between tasks
(``federator_spark/worker_gc.py``)."""

from __future__ import annotations

import gc
import inspect
import subprocess
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from federator_spark import worker_gc


class Node:
    """An object in a reference cycle: only a collection frees it."""

    def __init__(self) -> None:
        self.itself = self


def collected(target: object) -> bool:
    """Whether a collection walks ``target`` (frozen objects are in no generation)."""
    return any(o is target for o in gc.get_objects())


@pytest.fixture(autouse=True)
def unfrozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(worker_gc, "_modules_when_frozen", 0)
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_what_is_alive_is_frozen_and_garbage_is_collected_before() -> None:
    alive = Node()
    garbage = Node()
    garbage_ref = weakref.ref(garbage)
    del garbage
    assert collected(alive)

    worker_gc.freeze_loaded()

    assert not collected(alive)
    assert garbage_ref() is None  # freed, not frozen for good


def test_it_freezes_again_only_once_modules_were_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    worker_gc.freeze_loaded()
    made_by_a_task = Node()

    worker_gc.freeze_loaded()
    assert collected(made_by_a_task)  # nothing imported since: what tasks make stays collectable

    monkeypatch.setitem(sys.modules, "imported_lazily", types.ModuleType("imported_lazily"))
    worker_gc.freeze_loaded()
    assert not collected(made_by_a_task)


@pytest.fixture
def daemon(monkeypatch: pytest.MonkeyPatch) -> Any:
    """PySpark's daemon module, its ``gc`` as it is now restored afterwards."""
    from pyspark import daemon as module

    monkeypatch.setattr(module, "gc", module.gc)
    return module


def generations_walked(collect: Callable[[], object]) -> list[int]:
    """The oldest generation of each collection ``collect`` runs."""
    walked: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            walked.append(info["generation"])

    gc.callbacks.append(record)
    try:
        collect()
    finally:
        gc.callbacks.remove(record)
    return walked


def test_pysparks_daemon_collects_after_each_use_of_a_worker_through_its_gc() -> None:
    from pyspark import daemon

    # What collect_young_after_tasks relies on: a PySpark that collects otherwise fails here.
    assert "gc.collect()" in inspect.getsource(daemon.manager)
    assert daemon.gc is gc


def test_after_a_task_the_task_workers_collect_only_the_young_generations(daemon: Any) -> None:
    assert generations_walked(daemon.gc.collect) == [2]  # PySpark's own: everything not frozen

    worker_gc.collect_young_after_tasks(daemon)

    assert generations_walked(daemon.gc.collect) == [worker_gc.YOUNG]


def test_a_tasks_garbage_is_collected_and_what_outlives_it_is_not_walked_again(daemon: Any) -> None:
    worker_gc.collect_young_after_tasks(daemon)
    held_for_the_next_task = Node()  # events a receiver keeps, say
    garbage = Node()
    garbage_ref = weakref.ref(garbage)
    del garbage

    daemon.gc.collect()

    assert garbage_ref() is None
    assert any(o is held_for_the_next_task for o in gc.get_objects(generation=2))
    assert generations_walked(daemon.gc.collect) == [1]  # the next task's collection skips generation 2


WORKER_DAEMON = """
from pyspark import daemon
from federator_spark import worker_daemon
daemon.manager = lambda: print(generations_walked(daemon.gc.collect))  # instead of serving
worker_daemon.main()
"""


def test_the_task_workers_daemon_serves_with_young_collections_after_tasks() -> None:
    script = inspect.getsource(generations_walked) + WORKER_DAEMON
    ran = subprocess.run(
        [sys.executable, "-c", f"import gc\nfrom collections.abc import Callable\n{script}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert ran.stdout.strip() == f"[{worker_gc.YOUNG}]"
