"""How the fleet benchmark waits for a backlog's catch-up (``fleet_traffic.reached``): a target that keeps
growing is waited for however long the machine takes, one that stopped growing ends the wait."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.fleet_traffic import reached


def growing(every: float, until: int | None = None) -> Callable[[], int]:
    """A target that gains an event every ``every`` s (up to ``until``)."""
    started = time.monotonic()

    def count() -> int:
        held = int((time.monotonic() - started) / every)
        return held if until is None else min(held, until)

    return count


def test_a_catch_up_slower_than_the_timeout_is_waited_for_while_it_grows() -> None:
    # 6 events at one every 0.5 s: 3 s, three times the timeout, never 2 s without growth.
    assert reached(growing(0.5), 6, timeout=1.0, stall=2.0) == 6


def test_a_target_that_stopped_growing_ends_the_wait_once_it_has_not_grown_for_the_stall() -> None:
    started = time.monotonic()

    assert reached(growing(0.2, until=3), 10, timeout=0.5, stall=1.0) == 3
    assert 1.5 <= time.monotonic() - started < 4  # its last growth at 0.6 s, then 1 s without


def test_without_a_stall_the_timeout_holds_however_it_grows() -> None:
    started = time.monotonic()

    assert reached(growing(0.5), 100, timeout=1.0) < 100
    assert time.monotonic() - started < 2
