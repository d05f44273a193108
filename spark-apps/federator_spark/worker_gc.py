"""Keeps the garbage collections PySpark runs after each use of a Python worker cheap.

PySpark's daemon runs a full ``gc.collect()`` each time a reused Python worker has finished a task, a
writer's planning or a batch's commit (``pyspark/daemon.py``): several per batch. A full collection walks
every object the process tracks, most of them the modules of pyspark, pyarrow and the Azure SDKs, which
never become garbage: in the Service Bus benchmark at 500 messages/s these collections took nearly two
thirds of the CPU of the app's Python processes (~0.5 of the machine's two cores). ``gc.freeze`` moves
what is alive into a permanent generation that collections skip, so they walk only what tasks made since.
"""

from __future__ import annotations

import gc
import sys

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
