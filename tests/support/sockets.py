"""Sockets dropped without being closed, as the garbage collector finds them: a client that forgot one
leaves it to whichever later test collects it, where the suite's warnings-as-errors fail that test."""

from __future__ import annotations

import gc
import warnings


def unclosed_sockets() -> list[str]:
    """The sockets that were dropped without being closed since the last collection."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [str(w.message) for w in caught if "unclosed <socket" in str(w.message)]
