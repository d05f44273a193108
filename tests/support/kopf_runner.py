"""Running kopf in its own thread and event loop against the fake API server (docs/testing.md):
the server keeps serving while kopf starts and stops, and a test or benchmark drives both."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import kopf

from federator import metrics


def test_settings() -> kopf.OperatorSettings:
    """Short timeouts and backoffs, no CRD scanning, no peering, no kill timer when embedded."""
    settings = kopf.OperatorSettings()
    settings.scanning.disabled = True
    settings.peering.standalone = True
    settings.watching.server_timeout = 10
    settings.watching.client_timeout = 15
    settings.execution.default_backoff = 0.5
    settings.process.ultimate_exiting_timeout = None
    return settings


def reconcile_passes(kind: str) -> int:
    """The reconcile passes of `kind` Federator's handlers have finished in this process (the operator's
    own metric). A pass is counted before it writes its status and its Events: once a daemon's count has
    grown by 3, its first two passes are done."""
    found = metrics.REGISTRY.get_sample_value("federator_reconcile_duration_seconds_count", {"kind": kind})
    return int(found or 0)


@contextmanager
def running_operator(
    *,
    namespaces: Sequence[str] = ("default",),
    registry: kopf.OperatorRegistry | None = None,
    memo: Any = None,
    settings: kopf.OperatorSettings | None = None,
    ready_timeout: float = 15,
) -> Iterator[None]:
    """kopf running until the block ends; fails if it does not become ready or does not stop."""
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(
        target=asyncio.run,
        name="kopf",
        args=(
            kopf.operator(
                registry=registry,
                settings=settings or test_settings(),
                standalone=True,
                namespaces=list(namespaces),
                stop_flag=stop,
                ready_flag=ready,
                memo=memo,
            ),
        ),
    )
    thread.start()
    try:
        assert ready.wait(ready_timeout), "kopf did not become ready"
        yield
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive(), "kopf did not stop"
