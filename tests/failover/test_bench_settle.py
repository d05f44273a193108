"""bench.failover waits for the archive once the traffic stopped while it still grows, and tells events
lost (the archive, read to its end, lacks them, and the follower copied everything it reads) from events
not settled (the follower is still behind or its lag was not measured since the traffic stopped, or the
archive's reader has not read it to its end). A fixed 10 s quiet gave up during a batch slower than that
and counted its events as lost."""

from __future__ import annotations

import sys
from collections.abc import Callable

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.failover_traffic import SETTLE_LIMIT_SECONDS, SETTLE_QUIET_SECONDS, Archive, classify, settle

WANTED = {(0, n) for n in range(10)}


def first(count: int) -> set[tuple[int, int]]:
    return {(0, n) for n in range(count)}


class Timeline:
    """A fake clock that the settle's sleeps advance, with what the archive's reader holds, whether it
    has read the archive to its end and what the follower's lag says, each a function of the seconds
    since the wait began."""

    def __init__(
        self,
        held: Callable[[float], set[tuple[int, int]]],
        behind: Callable[[float], int | None],
        read_to_end: Callable[[float], bool] = lambda t: True,
    ) -> None:
        self.now = 0.0
        self.archive = Archive(
            lambda: held(self.now), lambda: read_to_end(self.now), lambda: behind(self.now)
        )

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def settle(self, wanted: set[tuple[int, int]] = WANTED) -> tuple[int, int, float]:
        settled = settle(self.archive, wanted, lambda: self.now, self.sleep)
        return settled.lost, settled.not_settled, settled.waited_s


def test_a_batch_that_lands_after_a_long_pause_is_waited_for() -> None:
    # 4 events archived at once, the other 6 after 14 s of nothing while the follower was still behind
    timeline = Timeline(lambda t: WANTED if t >= 14 else first(4), lambda t: 0 if t >= 14 else 6)
    lost, not_settled, waited = timeline.settle()
    assert (lost, not_settled) == (0, 0)
    assert 14 <= waited < 15  # it ends once everything is there


def test_events_the_archive_lacks_once_the_follower_copied_everything_are_lost_without_waiting() -> None:
    timeline = Timeline(lambda t: first(7), lambda t: 0)
    assert timeline.settle() == (3, 0, 0.0)  # nothing more can come


def test_a_reader_behind_the_archive_is_waited_for_before_anything_is_called_lost() -> None:
    # the follower is done; the bench's reader catches up its last 3 events after 12 s
    timeline = Timeline(lambda t: WANTED if t >= 12 else first(7), lambda t: 0, lambda t: t >= 12)
    lost, not_settled, waited = timeline.settle()
    assert (lost, not_settled) == (0, 0)
    assert 12 <= waited < 13


def test_what_the_reader_read_while_the_archive_was_read_to_its_end_is_not_lost() -> None:
    # the reader holds 7 when the follower is seen done; it reads the last 3 while the archive's end is
    # asked for (a run called 568 events lost so that the archive held)
    asked: list[float] = []

    def read_to_end(t: float) -> bool:
        asked.append(t)
        return True

    timeline = Timeline(lambda t: WANTED if asked else first(7), lambda t: 0, read_to_end)
    assert timeline.settle()[:2] == (0, 0)


def test_a_follower_still_behind_when_the_archive_went_quiet_is_not_settled() -> None:
    timeline = Timeline(lambda t: first(7), lambda t: 5)
    lost, not_settled, waited = timeline.settle()
    assert (lost, not_settled) == (0, 3)
    assert SETTLE_QUIET_SECONDS <= waited < SETTLE_QUIET_SECONDS + 1


def test_without_a_lag_measured_since_the_traffic_stopped_nothing_is_called_lost() -> None:
    assert Timeline(lambda t: first(1), lambda t: None).settle()[:2] == (0, 9)


def test_an_archive_not_read_to_its_end_is_not_settled() -> None:
    assert Timeline(lambda t: first(7), lambda t: 0, lambda t: False).settle()[:2] == (0, 3)


def test_a_growing_archive_is_waited_for_up_to_the_limit() -> None:
    # one more event every 20 s of the 100 sent: never quiet for SETTLE_QUIET_SECONDS
    timeline = Timeline(lambda t: first(1 + int(t // 20)), lambda t: 90)
    lost, not_settled, waited = timeline.settle(first(100))
    assert (lost, not_settled) == (0, 84)
    assert SETTLE_LIMIT_SECONDS <= waited < SETTLE_LIMIT_SECONDS + 1


def test_missing_events_beyond_what_the_follower_still_has_to_copy_are_lost() -> None:
    assert classify(10, 4) == (6, 4)  # 6 were left on a member it no longer reads
    assert classify(3, 40) == (0, 3)
    assert classify(3, None) == (0, 3)
    assert classify(0, 0) == (0, 0)
