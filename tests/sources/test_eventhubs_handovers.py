"""The buffer between a partition stream's receiver thread and its reader: bounded by events and by
body bytes, so a stream nobody reads stops receiving, yet holds enough for a worker's later task."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from federator_spark.sources import eventhubs_streams
from federator_spark.sources.eventhubs_streams import _HandOvers


def messages(count: int, size: int = 10) -> list[Any]:
    return [SimpleNamespace(data=[b"x" * size]) for _ in range(count)]


def put_in_background(buffer: _HandOvers, item: Any, closed: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=buffer.put, args=(item, closed), daemon=True)
    thread.start()
    return thread


def test_hand_overs_come_out_oldest_first_and_an_empty_buffer_times_out() -> None:
    buffer, closed = _HandOvers(), threading.Event()
    first, second = messages(2), messages(3)
    buffer.put(first, closed)
    buffer.put(second, closed)
    assert buffer.get(0.1) is first
    assert buffer.get(0.1) is second
    assert buffer.get(0.05) is None


def test_the_receiver_waits_once_the_event_bound_is_reached_until_the_reader_takes_some(monkeypatch) -> None:
    monkeypatch.setattr(eventhubs_streams, "_BUFFERED_EVENTS", 10)
    buffer, closed = _HandOvers(), threading.Event()
    buffer.put(messages(6), closed)
    buffer.put(messages(6), closed)  # 12 >= 10: the next hand-over must wait
    blocked = put_in_background(buffer, messages(1), closed)
    blocked.join(0.3)
    assert blocked.is_alive()
    assert len(buffer.get(0.1) or []) == 6
    blocked.join(2)
    assert not blocked.is_alive()


def test_large_events_are_bounded_by_bytes_but_one_hand_over_always_fits(monkeypatch) -> None:
    monkeypatch.setattr(eventhubs_streams, "_BUFFERED_BYTES", 1000)
    buffer, closed = _HandOvers(), threading.Event()
    huge = messages(2, size=5000)  # over the bound alone: taken, or the stream could never go on
    buffer.put(huge, closed)
    blocked = put_in_background(buffer, messages(1), closed)
    blocked.join(0.3)
    assert blocked.is_alive()
    assert buffer.get(0.1) is huge
    blocked.join(2)
    assert not blocked.is_alive()


def test_a_closed_stream_drops_what_it_could_not_hand_over(monkeypatch) -> None:
    monkeypatch.setattr(eventhubs_streams, "_BUFFERED_EVENTS", 1)
    buffer, closed = _HandOvers(), threading.Event()
    buffer.put(messages(1), closed)
    blocked = put_in_background(buffer, messages(1), closed)
    closed.set()
    blocked.join(2)
    assert not blocked.is_alive()
    buffer.get(0.1)
    assert buffer.get(0.05) is None


def test_an_error_takes_no_room_and_reaches_the_reader_in_order(monkeypatch) -> None:
    monkeypatch.setattr(eventhubs_streams, "_BUFFERED_EVENTS", 1)
    buffer, closed = _HandOvers(), threading.Event()
    events, error = messages(1), ConnectionError("link detached")
    buffer.put(events, closed)
    waiting = put_in_background(buffer, error, closed)  # waits for room like any hand-over
    assert buffer.get(0.1) is events
    waiting.join(2)
    assert buffer.get(0.1) is error


@pytest.mark.parametrize("data", [None, []])
def test_a_message_without_data_sections_counts_no_bytes(data: Any) -> None:
    assert eventhubs_streams._body_bytes([SimpleNamespace(data=data)]) == 0
