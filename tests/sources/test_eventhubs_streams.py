"""Partition streams against the emulator, without Spark: a read hands out exactly the asked range and
keeps what came beyond it, and a Python worker's kept stream serves its next task on the partition
when it can get there by reading forward."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from federator_emulator.server import RunningEmulator
from federator_spark.connections import Connection
from federator_spark.sources import eventhubs_frames, eventhubs_streams
from federator_spark.sources.eventhubs_streams import PartitionStream

pytestmark = pytest.mark.slow  # each receiver takes the SDK ~1 s to open and close

CONFIG = {"namespaces": [{"name": "ns1", "eventHubs": [{"name": "hub", "partitionCount": 1}]}]}


@pytest.fixture
def hub(emulator_factory) -> Iterator[tuple[Connection, RunningEmulator]]:
    emulator = emulator_factory(CONFIG)
    before = set(threading.enumerate())
    yield Connection(connection_string=emulator.connection_string("ns1")), emulator
    for stream in list(eventhubs_streams._kept.values()):  # streams this test process kept
        stream.close(wait=True)
    eventhubs_streams._kept.clear()
    # Streams closed without waiting (by take() or the idle reaper) end on their own threads: wait for
    # them while the emulator still runs, or the SDK reconnects to a stopped one and leaks its sockets.
    for thread in set(threading.enumerate()) - before:
        if thread.name != "eventhubs-reaper":
            thread.join(10)


def publish(emulator: RunningEmulator, count: int, first: int = 0) -> None:
    cs = emulator.connection_string("ns1")
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub") as producer:
        batch = producer.create_batch(partition_id="0")
        for i in range(first, first + count):
            batch.add(EventData(f"e{i}"))
        producer.send_batch(batch)


def sequences(stream: PartitionStream, after: int, until: int) -> list[int]:
    batches = stream.read_range(after, until, timeout=10)
    return [eventhubs_streams.sequence_number(message) for messages in batches for message in messages]


def test_a_range_read_stops_at_its_end_and_the_next_range_continues_from_the_kept_events(hub) -> None:
    connection, emulator = hub
    publish(emulator, 30)
    stream = PartitionStream(connection, "hub", "$Default", "0", 4)
    try:
        assert sequences(stream, 4, 12) == list(range(5, 13))
        assert stream.position == 12
        assert sequences(stream, 12, 29) == list(range(13, 30))
        assert sequences(stream, 29, 29) == []
    finally:
        stream.close(wait=True)


def test_a_kept_stream_serves_the_next_task_and_reads_forward_over_a_gap(hub) -> None:
    connection, emulator = hub
    publish(emulator, 20)
    first = eventhubs_streams.take(connection, "hub", "$Default", "0", -1)
    assert sequences(first, -1, 9) == list(range(10))
    eventhubs_streams.keep(first)

    again = eventhubs_streams.take(connection, "hub", "$Default", "0", 9)
    assert again is first
    eventhubs_streams.keep(again)
    # Another worker read 10..14 meanwhile: this one skips them.
    forward = eventhubs_streams.take(connection, "hub", "$Default", "0", 14)
    assert forward is first
    assert sequences(forward, 14, 19) == list(range(15, 20))
    eventhubs_streams.keep(forward)


def test_a_replay_from_before_a_kept_stream_gets_a_new_stream(hub) -> None:
    connection, emulator = hub
    publish(emulator, 10)
    first = eventhubs_streams.take(connection, "hub", "$Default", "0", -1)
    assert sequences(first, -1, 9) == list(range(10))
    eventhubs_streams.keep(first)

    replay = eventhubs_streams.take(connection, "hub", "$Default", "0", 4)
    try:
        assert replay is not first
        assert sequences(replay, 4, 9) == list(range(5, 10))
    finally:
        replay.close(wait=True)
        first.close(wait=True)  # take() closed it without waiting for its thread


def test_a_range_whose_events_never_come_times_out(hub) -> None:
    connection, emulator = hub
    publish(emulator, 3)
    stream = PartitionStream(connection, "hub", "$Default", "0", -1)
    try:
        with pytest.raises(TimeoutError):
            for _ in stream.read_range(-1, 5, timeout=1.5):
                pass
    finally:
        stream.close(wait=True)


def test_a_kept_stream_left_idle_is_closed_and_the_next_task_opens_a_new_one(hub, monkeypatch) -> None:
    connection, emulator = hub
    publish(emulator, 5)
    monkeypatch.setattr(eventhubs_streams, "_IDLE_CLOSE_SECONDS", 0.3)
    monkeypatch.setattr(eventhubs_streams, "_REAP_EVERY_SECONDS", 0.1)
    first = eventhubs_streams.take(connection, "hub", "$Default", "0", -1)
    assert sequences(first, -1, 4) == list(range(5))
    eventhubs_streams.keep(first)

    deadline = time.monotonic() + 10  # the reaper may still be in a sleep of the unpatched length
    while first.key in eventhubs_streams._kept and time.monotonic() < deadline:
        time.sleep(0.05)
    later = eventhubs_streams.take(connection, "hub", "$Default", "0", 4)
    try:
        assert later is not first
    finally:
        later.close(wait=True)
        first.close(wait=True)  # returns once the reaper's close has finished too


def test_a_connection_lost_mid_stream_is_reopened_after_the_last_event_received(hub) -> None:
    connection, emulator = hub
    publish(emulator, 20)
    stream = PartitionStream(connection, "hub", "$Default", "0", -1)
    try:
        assert sequences(stream, -1, 9) == list(range(10))
        broken = stream._consumer
        broken._handler._connection._transport.sock.shutdown(socket.SHUT_RDWR)
        publish(emulator, 20, first=20)

        assert sequences(stream, 9, 39) == list(range(10, 40))  # no gap, no repeat
        assert stream._consumer is not broken and not stream.broken
    finally:
        stream.close(wait=True)


def test_a_stream_reports_a_missing_event_hub_at_once(hub) -> None:
    # Not found is a refusal (a configuration error), handed over without retrying; outages are retried
    # (tests/spark/test_outages.py).
    connection, _emulator = hub
    stream = PartitionStream(connection, "no-such-hub", "$Default", "0", -1)
    try:
        with pytest.raises(Exception, match="could not be found"):
            for _ in stream.read_range(-1, 5, timeout=30):
                pass
        assert stream.broken
    finally:
        stream.close(wait=True)


def test_a_long_lived_stream_does_not_hold_a_delivery_tag_per_event_received(hub) -> None:
    connection, emulator = hub
    publish(emulator, 2000)
    stream = PartitionStream(connection, "hub", "$Default", "0", -1)
    try:
        assert sequences(stream, -1, 1999) == list(range(2000))
        # The SDK's link adds every delivery's tag to a set that only a disposition empties, and it
        # sends none for Event Hubs events.
        assert len(stream._consumer._handler._link._received_delivery_tags) <= 16
    finally:
        stream.close(wait=True)


def test_a_stream_hands_out_the_messages_the_sdks_own_receiver_decodes(hub) -> None:
    connection, emulator = hub
    cs = emulator.connection_string("ns1")
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub") as producer:
        batch = producer.create_batch(partition_id="0")
        for i in range(400):  # past the link credit: the stream tops it up as it goes
            event = EventData(b"x" * (i * 5))  # up to 2 KB: one-byte and four-byte sizes
            event.properties = {"n": i, "text": "é" * (i % 300), "flag": i % 2 == 0, "ratio": i / 7}
            event.message_id = f"id-{i}"
            event.content_type = "application/octet-stream"
            batch.add(event)
        producer.send_batch(batch)
    stream = PartitionStream(connection, "hub", "$Default", "0", -1)
    try:
        ours = [m for messages in stream.read_range(-1, 399, timeout=10) for m in messages]
        assert isinstance(stream._consumer._handler._connection._read_frame, eventhubs_frames.TransferFrames)
    finally:
        stream.close(wait=True)

    with EventHubConsumerClient.from_connection_string(cs, "$Default", eventhub_name="hub") as consumer:
        received: list[Any] = []
        consumer_thread = threading.Thread(
            target=consumer.receive_batch,
            kwargs={
                "on_event_batch": lambda _, events: received.extend(events),
                "partition_id": "0",
                "starting_position": "-1",
                "max_batch_size": 100,
            },
            daemon=True,
        )
        consumer_thread.start()
        deadline = time.monotonic() + 20
        while len(received) < 400 and time.monotonic() < deadline:
            time.sleep(0.1)
    sdks = [event._message for event in received]

    def sections(message: Any) -> tuple[Any, ...]:
        return (message.message_annotations, message.properties, message.application_properties, message.data)

    assert [sections(m) for m in ours] == [sections(m) for m in sdks]
