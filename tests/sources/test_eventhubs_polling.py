"""How often the Event Hubs reader asks the hub for new events: with no trigger interval Spark asks
again 10 ms after an empty answer, so an idle hub is asked at most every ``_IDLE_POLL_SECONDS``, and a
hub with new events at once."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from federator_spark.sources import eventhubs
from federator_spark.sources.eventhubs import EventHubsStreamReader
from federator_spark.sources.eventhubs_settings import HubSourceSettings

OPTIONS = {
    "connection": '{"connection_string": "Endpoint=sb://h/;SharedAccessKeyName=k;SharedAccessKey=v"}',
    "eventHubName": "hub",
}


class Clock:
    """time.monotonic and time.sleep of the reader's module: sleeping moves the clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


@pytest.fixture
def reader(monkeypatch) -> tuple[EventHubsStreamReader, Clock, list[dict[str, int]]]:
    clock = Clock()
    monkeypatch.setattr(eventhubs, "time", clock)
    answers: list[dict[str, int]] = []  # what the hub says, in order
    reader = EventHubsStreamReader(HubSourceSettings.from_options(OPTIONS))
    monkeypatch.setattr(reader, "_last_sequence_numbers", lambda: answers.pop(0))
    return reader, clock, answers


def ask(reader: EventHubsStreamReader, start: dict[str, Any]) -> dict[str, int]:
    return reader.latestOffset(start, ReadAllAvailable())


def test_an_idle_hub_is_asked_again_only_after_the_idle_poll_interval(reader) -> None:
    reader, clock, answers = reader
    answers += [{"0": 5, "1": 7}] * 2
    start = {"0": 5, "1": 7}

    assert ask(reader, start) == start
    clock.now += 0.01  # Spark's polling delay
    assert ask(reader, start) == start

    assert clock.slept == [pytest.approx(eventhubs._IDLE_POLL_SECONDS - 0.01)]


def test_a_hub_with_new_events_is_asked_again_at_once(reader) -> None:
    reader, clock, answers = reader
    answers += [{"0": 6, "1": 7}, {"0": 9, "1": 7}]

    assert ask(reader, {"0": 5, "1": 7}) == {"0": 6, "1": 7}
    assert ask(reader, {"0": 6, "1": 7}) == {"0": 9, "1": 7}

    assert clock.slept == []


def test_a_trigger_interval_longer_than_the_idle_poll_interval_never_waits(reader) -> None:
    reader, clock, answers = reader
    answers += [{"0": 5}] * 3
    for _ in range(3):
        assert ask(reader, {"0": 5}) == {"0": 5}
        clock.now += 1.0

    assert clock.slept == []
