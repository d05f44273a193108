"""Keeps the garbage collections PySpark runs after each use of a Python worker cheap.

PySpark's daemon runs a full ``gc.collect()`` each time a reused Python worker has finished a task, a
writer's planning or a batch's commit (``pyspark/daemon.py``): several per batch. A full collection walks
every object the process tracks, most of them the modules of pyspark, pyarrow and the Azure SDKs, which
never become garbage: in the Service Bus benchmark at 500 messages/s these collections took nearly two
thirds of the CPU of the app's Python processes (~0.5 of the machine's two cores). ``gc.freeze`` moves
what is alive into a permanent generation that collections skip, so they walk only what tasks made since.

What tasks made since still includes what a write worker keeps between tasks: the events its receivers
hold for the next task (up to 4,096 per partition, ``eventhubs_streams``). With a member catching up a
backlog of 1,000,000 events, every receiver's buffer was full, and the full collection after each task
(every member's, 20 a second) walked them all: the write workers took a core and the backlog's batches
waited seconds to start (bench.fleet, docs/sharing.md). So the task workers' daemon collects only the
young generations after a task (:func:`collect_young_after_tasks`): a task's own garbage is young, and
what outlives one collection is walked again only by Python's own full collections, which it runs as
the old generation grows.
"""

from __future__ import annotations

import gc
import sys
from functools import partial
from types import SimpleNamespace
from typing import Any

YOUNG = 1
"""The oldest generation the collection after a task walks (0 and 1: what was made since the last)."""

_modules_when_frozen = 0


def freeze_loaded() -> None:
    """Freeze what is alive, after a collection (so garbage is not frozen with it), whenever modules were
    imported since the last freeze: the first entry of a process, and the next after a task that imported
    lazily (the SDKs). Bounded: the app imports a fixed set of modules. What is frozen and later becomes
    cyclic garbage is never collected; it is what was alive between two tasks (clients kept for the next
    task, caches), which lives as long as the process anyway."""
    global _modules_when_frozen
    if len(sys.modules) > _modules_when_frozen:
        gc.collect()
        gc.freeze()
        _modules_when_frozen = len(sys.modules)


def collect_young_after_tasks(daemon: Any) -> None:
    """Make the module ``daemon`` (PySpark's ``pyspark.daemon``, loaded but not yet serving) collect only
    the young generations where it collects after each use of a worker: its ``gc`` is this namespace."""
    daemon.gc = SimpleNamespace(collect=partial(gc.collect, YOUNG))
