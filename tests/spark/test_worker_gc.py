"""A Python worker Spark runs for the app freezes what is alive once its modules are loaded, so the full
collection PySpark's daemon runs after each use of the worker walks only what tasks made since
(``federator_spark/worker_gc.py``)."""

from __future__ import annotations

import gc
import sys
import types
import weakref
from collections.abc import Iterator

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
