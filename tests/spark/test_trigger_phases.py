"""Spark's processing-time triggers fire at the same instants for every query with the same interval, so
the paced members of a shared application each get a phase (``federator_spark.scheduling``): their
sources hold Spark's ask for offsets until that far into the interval (``sources/trigger_phase.py``), and
their batches come one after the other instead of together. No JVM here."""

from __future__ import annotations

from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import pytest

from federator_spark.connections import Connection
from federator_spark.scheduling import spread
from federator_spark.sources import eventhubs, trigger_phase
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.trigger_phase import TriggerPhase

TICK = 1_796_000_000.0  # a whole multiple of the interval on the wall clock: when Spark's trigger fires
PHASE = TriggerPhase(interval=0.5, offset=0.2)


def test_the_first_member_begins_on_the_tick_and_each_next_in_the_widest_gap() -> None:
    taken: list[float] = []
    for _ in range(9):
        taken.append(spread(taken))

    assert taken[:5] == [0.0, 0.5, 0.25, 0.75, 0.125]
    ordered = sorted(taken)
    assert min(b - a for a, b in pairwise(ordered)) == 1 / 16


def test_a_member_that_left_leaves_its_phase_to_the_next() -> None:
    assert spread([0.0, 0.5, 0.75]) == 0.25
    assert spread([0.5]) == 0.0  # the gap around the end of the interval counts too


def test_an_ask_on_the_tick_waits_for_the_phase_and_a_late_one_does_not() -> None:
    assert PHASE.wait(TICK + 0.01) == pytest.approx(0.19)
    assert PHASE.wait(TICK + 0.2) == 0.0
    assert PHASE.wait(TICK + 0.3) == 0.0  # the batch before took longer than the interval: no more delay
    assert TriggerPhase(interval=0.5, offset=0.0).wait(TICK + 0.01) == 0.0


def test_a_phase_lies_within_its_interval() -> None:
    with pytest.raises(ValueError, match="not within its interval"):
        TriggerPhase(interval=0.5, offset=0.5)


def test_an_event_hub_source_holds_spark_s_ask_until_its_phase(monkeypatch: Any) -> None:
    clock = SimpleNamespace(now=TICK + 0.05, slept=[])

    def sleep(seconds: float) -> None:
        clock.slept.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(trigger_phase, "time", SimpleNamespace(time=lambda: clock.now, sleep=sleep))
    asked: list[float] = []
    reader = eventhubs.EventHubsStreamReader(
        HubSourceSettings(Connection(connection_string="Endpoint=sb://a/"), "orders", phase=PHASE)
    )
    monkeypatch.setattr(reader, "_poll", lambda start: asked.append(clock.now) or {"0": 9})

    assert reader.latestOffset({"0": 4}, eventhubs.ReadAllAvailable()) == {"0": 9}
    assert clock.slept == [pytest.approx(0.15)] and asked == [pytest.approx(TICK + 0.2)]
