"""Where in each trigger interval a paced member's batches begin (``federator_spark.scheduling``).

Spark's processing-time trigger fires at whole multiples of its interval on the wall clock
(``ProcessingTimeExecutor.nextBatchTime``), whatever the query: every member of a shared application
paced at 500 ms asked for its offsets at the same instants, x.000 and x.500 s, and their batches then
queued together for the driver's threads and the two task slots; the last of them waited for the
others' (``bench.fleet``: 25-100 ms after each tick for 90 % of nine members' batches, 200 ms p50 from
a batch's offsets to its write task's start). A member with a phase holds Spark's ask for its offsets
until that far into the interval, so that the members' batches come one after the other. Its events
wait no longer: a batch still begins once an interval, and holds what came since the one before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TriggerPhase:
    interval: float
    """The query's trigger interval, in seconds."""
    offset: float
    """How far into each interval its batches begin, in seconds (0 <= offset < interval)."""

    def __post_init__(self) -> None:
        if not 0 <= self.offset < self.interval:
            raise ValueError(
                f"a trigger phase of {self.offset} s is not within its interval of {self.interval} s"
            )

    def wait(self, now: float) -> float:
        """How long an ask for offsets at ``now`` (wall clock, seconds) waits: until the phase, if Spark
        asked before it in this interval. A later ask (its batch before took longer than the interval)
        waits for nothing: holding it would only delay that member more."""
        into = now % self.interval
        return self.offset - into if into < self.offset else 0.0


def hold(phase: TriggerPhase | None) -> None:
    """Wait for ``phase`` (None: not at all), before a source asks for its offsets."""
    if phase is not None:
        time.sleep(phase.wait(time.time()))
