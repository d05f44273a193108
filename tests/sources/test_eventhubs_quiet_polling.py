"""An Event Hubs reader whose hub has had nothing new for ``_QUIET_AFTER_SECONDS`` asks it only every
``_QUIET_POLL_SECONDS`` (an idle query's CPU, and its namespace's), after ``_STILL_AFTER_SECONDS`` every
``_STILL_POLL_SECONDS`` (an idle member's CPU in a shared application), holding Spark's asks until a poll is
due (each costs the query's JVM a trigger), and every ``_IDLE_POLL_SECONDS`` again from the
first poll that finds an event: steady traffic never slows down."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from test_eventhubs_polling import OPTIONS, Clock

from federator_spark.sources import eventhubs
from federator_spark.sources.eventhubs import EventHubsStreamReader
from federator_spark.sources.eventhubs_settings import HubSourceSettings

SPARK_POLLING_DELAY = 0.01  # what Spark waits after an empty answer before asking again


class Hub:
    """The partitions' last sequence numbers, counting the reader's asks."""

    def __init__(self) -> None:
        self.last = {"0": 5, "1": 7}
        self.asks = 0

    def answer(self) -> dict[str, int]:
        self.asks += 1
        return dict(self.last)


Setup = tuple[EventHubsStreamReader, Clock, Hub]


@pytest.fixture
def quiet_reader(monkeypatch: pytest.MonkeyPatch) -> Setup:
    clock, hub = Clock(), Hub()
    monkeypatch.setattr(eventhubs, "time", clock)
    reader = EventHubsStreamReader(HubSourceSettings.from_options(OPTIONS))
    monkeypatch.setattr(reader, "_last_sequence_numbers", hub.answer)
    return reader, clock, hub


def spark_asks(
    reader: EventHubsStreamReader,
    clock: Clock,
    start: dict[str, int],
    seconds: float,
    every: float = SPARK_POLLING_DELAY,
) -> tuple[Any, int]:
    """Spark's micro-batch loop for ``seconds`` of the clock, asking ``every`` s after an answer (no trigger
    interval: 10 ms after an empty one), until an answer goes past ``start``; the last answer, and how
    many times Spark asked."""
    until, offsets, asked = clock.now + seconds, start, 0
    while clock.now < until and offsets == start:
        offsets = reader.latestOffset(start, ReadAllAvailable())
        asked += 1
        clock.now += every
    return offsets, asked


def test_a_hub_quiet_for_a_while_is_asked_once_a_second(quiet_reader: Setup) -> None:
    reader, clock, hub = quiet_reader
    start = dict(hub.last)
    spark_asks(reader, clock, start, eventhubs._QUIET_AFTER_SECONDS)
    asks_while_recent = hub.asks

    spark_asks(reader, clock, start, 20.0)

    assert asks_while_recent >= eventhubs._QUIET_AFTER_SECONDS / eventhubs._IDLE_POLL_SECONDS - 2
    assert 19 <= hub.asks - asks_while_recent <= 21
    assert max(clock.slept) <= eventhubs._QUIET_POLL_SECONDS


def test_the_first_event_after_a_quiet_spell_brings_back_the_short_interval(quiet_reader: Setup) -> None:
    reader, clock, hub = quiet_reader
    start = dict(hub.last)
    spark_asks(reader, clock, start, eventhubs._QUIET_AFTER_SECONDS + 5)
    hub.last["1"] = 8

    assert reader.latestOffset(start, ReadAllAvailable()) == {"0": 5, "1": 8}
    clock.slept.clear()
    spark_asks(reader, clock, {"0": 5, "1": 8}, 1.0)

    assert max(clock.slept) == pytest.approx(eventhubs._IDLE_POLL_SECONDS - SPARK_POLLING_DELAY)


def test_a_hub_with_events_every_poll_is_never_waited_for(quiet_reader: Setup) -> None:
    reader, clock, hub = quiet_reader
    start = dict(hub.last)
    for _ in range(100):
        hub.last["0"] += 1
        start = reader.latestOffset(start, ReadAllAvailable())
        clock.now += 0.5  # the batch

    assert start["0"] == 105
    assert clock.slept == []


TRIGGER_SECONDS = 0.5  # a paced member of a shared application: Spark asks every half second


def test_a_hub_still_for_half_a_minute_is_asked_every_three_seconds_and_spark_as_often(
    quiet_reader: Setup,
) -> None:
    reader, clock, hub = quiet_reader
    start = dict(hub.last)
    spark_asks(reader, clock, start, eventhubs._STILL_AFTER_SECONDS, TRIGGER_SECONDS)
    before = hub.asks

    _, spark_asked = spark_asks(reader, clock, start, 60.0, TRIGGER_SECONDS)

    assert 19 <= hub.asks - before <= 21
    assert spark_asked <= 21  # each of Spark's asks costs its JVM a trigger: held until a poll is due
    assert max(clock.slept) <= eventhubs._STILL_POLL_SECONDS


def test_the_first_event_after_a_long_pause_is_found_within_three_seconds_and_asks_are_quick_again(
    quiet_reader: Setup,
) -> None:
    reader, clock, hub = quiet_reader
    start = dict(hub.last)
    spark_asks(reader, clock, start, eventhubs._STILL_AFTER_SECONDS + 10, TRIGGER_SECONDS)
    hub.last["0"] += 1
    arrived = clock.now

    found, _ = spark_asks(reader, clock, start, 10.0, TRIGGER_SECONDS)

    assert found == hub.last
    assert clock.now - arrived <= eventhubs._STILL_POLL_SECONDS + TRIGGER_SECONDS
    asks = hub.asks
    spark_asks(
        reader, clock, found, 5.0, TRIGGER_SECONDS
    )  # nothing new again: a pause of seconds, not of minutes
    assert hub.asks - asks >= 9
