"""Event Hubs behaviour seen through the real azure-eventhub clients (sync and async)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.aio import EventHubProducerClient as AsyncEventHubProducerClient
from azure.eventhub.exceptions import EventHubError

pytestmark = pytest.mark.timeout(60)


def send(cs: str, bodies: list[str], **batch_kwargs) -> None:
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        batch = producer.create_batch(**batch_kwargs)
        for body in bodies:
            batch.add(EventData(body))
        producer.send_batch(batch)


def test_hub_properties_list_the_configured_partitions(cs):
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        properties = producer.get_eventhub_properties()
        empty = producer.get_partition_properties("0")
    assert properties["eventhub_name"] == "hub1"
    assert properties["partition_ids"] == ["0", "1"]
    assert empty["is_empty"] is True
    assert empty["last_enqueued_sequence_number"] == -1


def test_batch_to_a_partition_is_received_in_order_with_broker_annotations(cs, eh_receive):
    send(cs, ["a", "b", "c"], partition_id="1")
    events = eh_receive(cs, 3, partition_id="1", starting_position="-1")
    assert [e.body_as_str() for e in events] == ["a", "b", "c"]
    assert [e.sequence_number for e in events] == [0, 1, 2]
    offsets = [int(e.offset) for e in events]
    assert offsets[0] == 0 and offsets == sorted(offsets) and len(set(offsets)) == 3
    assert all(e.enqueued_time is not None for e in events)


def test_single_event_keeps_properties_and_content_type(cs, eh_receive):
    event = EventData("payload")
    event.properties = {"kind": "test", "n": 7}
    event.content_type = "text/plain"
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        producer.send_event(event, partition_id="0")
    (received,) = eh_receive(cs, 1, starting_position="-1")
    assert received.properties == {b"kind": b"test", b"n": 7}
    assert received.content_type == "text/plain"


def test_partition_key_maps_to_one_partition_and_keeps_order(cs):
    send(cs, ["k1", "k2"], partition_key="user-42")
    send(cs, ["k3"], partition_key="user-42")
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        counts = {pid: producer.get_partition_properties(pid) for pid in ("0", "1")}
    non_empty = [pid for pid, p in counts.items() if not p["is_empty"]]
    assert len(non_empty) == 1
    assert counts[non_empty[0]]["last_enqueued_sequence_number"] == 2


def test_partition_key_is_delivered_with_the_event(cs, eh_receive):
    send(cs, ["x"], partition_key="user-42")
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        pid = next(p for p in ("0", "1") if not producer.get_partition_properties(p)["is_empty"])
    (event,) = eh_receive(cs, 1, partition_id=pid, starting_position="-1")
    assert event.partition_key == b"user-42"


@pytest.mark.parametrize(
    ("position", "inclusive", "expected"),
    [
        ("-1", False, ["e0", "e1", "e2", "e3"]),
        (1, False, ["e2", "e3"]),
        (1, True, ["e1", "e2", "e3"]),
        (datetime(2000, 1, 1, tzinfo=UTC), False, ["e0", "e1", "e2", "e3"]),
    ],
)
def test_starting_positions(cs, eh_receive, position, inclusive, expected):
    send(cs, ["e0", "e1", "e2", "e3"], partition_id="0")
    events = eh_receive(
        cs, len(expected), starting_position=position, starting_position_inclusive=inclusive
    )
    assert [e.body_as_str() for e in events] == expected


def test_starting_position_by_offset_is_exclusive_unless_inclusive(cs, eh_receive):
    send(cs, ["e0", "e1", "e2"], partition_id="0")
    offsets = [e.offset for e in eh_receive(cs, 3, starting_position="-1")]
    after = eh_receive(cs, 1, starting_position=offsets[1])
    assert after[0].body_as_str() == "e2"
    at = eh_receive(cs, 2, starting_position=offsets[1], starting_position_inclusive=True)
    assert [e.body_as_str() for e in at] == ["e1", "e2"]


def test_starting_position_by_enqueued_time_skips_older_events(cs, eh_receive):
    send(cs, ["old"], partition_id="0")
    (old,) = eh_receive(cs, 1, starting_position="-1")
    send(cs, ["new"], partition_id="0")
    events = eh_receive(cs, 1, starting_position=old.enqueued_time + timedelta(milliseconds=1))
    assert events[0].body_as_str() == "new"


def test_latest_only_sees_events_sent_after_the_consumer_started(cs, eh_receive):
    send(cs, ["before"], partition_id="0")
    events = eh_receive(cs, 1, starting_position="@latest", on_ready=lambda: send(cs, ["after"], partition_id="0"))
    assert [e.body_as_str() for e in events] == ["after"]


def test_consumer_groups_read_independently(cs, eh_receive):
    send(cs, ["a", "b"], partition_id="0")
    default = eh_receive(cs, 2, starting_position="-1")
    other = eh_receive(cs, 2, consumer_group="cg1", starting_position="-1")
    assert [e.body_as_str() for e in default] == [e.body_as_str() for e in other] == ["a", "b"]


def test_higher_owner_level_steals_the_partition(cs, eh_receive):
    low = EventHubConsumerClient.from_connection_string(cs, consumer_group="$Default", eventhub_name="hub1")
    errors: list[Exception] = []
    started = threading.Event()
    stolen = threading.Event()

    def on_error(context, error):
        errors.append(error)
        stolen.set()

    thread = threading.Thread(
        target=low.receive,
        kwargs={
            "on_event": lambda c, e: None,
            "partition_id": "0",
            "owner_level": 1,
            "on_error": on_error,
            "on_partition_initialize": lambda c: started.set(),
            "max_wait_time": 0.5,
        },
    )
    thread.start()
    try:
        assert started.wait(15)
        send(cs, ["x"], partition_id="0")
        events = eh_receive(cs, 1, starting_position="-1", owner_level=2)
        assert stolen.wait(15), "the lower owner level consumer was not disconnected"
    finally:
        low.close()
        thread.join(15)
    assert events[0].body_as_str() == "x"
    assert "stolen" in str(errors[0]).lower() or "owner level" in str(errors[0]).lower()


def test_last_enqueued_event_properties_are_tracked(cs, eh_receive):
    send(cs, ["a", "b", "c"], partition_id="0")
    client = EventHubConsumerClient.from_connection_string(cs, consumer_group="$Default", eventhub_name="hub1")
    seen: list[dict] = []
    done = threading.Event()

    def on_event(context, event):
        if event is not None:
            seen.append(context.last_enqueued_event_properties)
            done.set()

    thread = threading.Thread(
        target=client.receive,
        kwargs={
            "on_event": on_event,
            "partition_id": "0",
            "starting_position": "-1",
            "track_last_enqueued_event_properties": True,
            "max_wait_time": 0.5,
        },
    )
    thread.start()
    try:
        assert done.wait(15)
    finally:
        client.close()
        thread.join(15)
    assert seen[0]["sequence_number"] == 2
    assert seen[0]["offset"] is not None


@pytest.mark.timeout(30)
def test_events_older_than_retention_disappear(emulator_factory):
    emu = emulator_factory({"namespaces": [{"name": "ns", "eventHubs": [{"name": "hub1", "retentionSeconds": 1}]}]})
    cs = emu.connection_string()
    send(cs, ["old"], partition_id="0")
    partition = emu.state().event_hub("hub1").partition("0")
    assert emu.call(lambda: partition.next_sequence_number) == 1
    # Retention is time-driven: wait (bounded) for the emulator's tick to drop the event.
    dropped = threading.Event()
    for _ in range(50):
        if emu.call(lambda: partition.is_empty):
            dropped.set()
            break
        dropped.wait(0.1)
    assert dropped.is_set(), "event was not dropped after the retention period"
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        properties = producer.get_partition_properties("0")
    assert properties["is_empty"] is True
    assert properties["beginning_sequence_number"] == 1


@pytest.mark.asyncio
async def test_async_clients_send_and_receive(cs, eh_receive_async):
    async with AsyncEventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        batch = await producer.create_batch(partition_id="1")
        for i in range(5):
            batch.add(EventData(f"async-{i}"))
        await producer.send_batch(batch)
        props = await producer.get_partition_properties("1")
    assert props["last_enqueued_sequence_number"] == 4
    events = await eh_receive_async(cs, 5, partition_id="1", starting_position="-1")
    assert [e.body_as_str() for e in events] == [f"async-{i}" for i in range(5)]
