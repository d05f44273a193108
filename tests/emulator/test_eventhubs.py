"""Event Hubs behaviour seen through the real azure-eventhub clients (sync and async)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest
from azure.eventhub import EventData, EventDataBatch, EventHubProducerClient
from azure.eventhub.aio import EventHubConsumerClient as AsyncEventHubConsumerClient
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


@pytest.mark.asyncio
async def test_single_event_keeps_properties_and_content_type(cs, eh_receive_async):
    event = EventData("payload")
    event.properties = {"kind": "test", "n": 7}
    event.content_type = "text/plain"
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        producer.send_event(event, partition_id="0")
    (received,) = await eh_receive_async(cs, 1, starting_position="-1")
    assert received.properties == {b"kind": b"test", b"n": 7}
    assert received.content_type == "text/plain"


@pytest.mark.asyncio
async def test_partition_key_maps_to_one_partition_keeps_order_and_is_delivered(cs, eh_receive_async):
    send(cs, ["k1", "k2"], partition_key="user-42")
    send(cs, ["k3"], partition_key="user-42")
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        properties = {pid: producer.get_partition_properties(pid) for pid in ("0", "1")}
    (pid,) = [pid for pid, p in properties.items() if not p["is_empty"]]
    assert properties[pid]["last_enqueued_sequence_number"] == 2
    events = await eh_receive_async(cs, 3, partition_id=pid, starting_position="-1")
    assert [e.body_as_str() for e in events] == ["k1", "k2", "k3"]
    assert {e.partition_key for e in events} == {b"user-42"}


@pytest.mark.asyncio
async def test_every_starting_position_selects_the_right_events(cs, eh_receive_async):
    send(cs, ["old"], partition_id="0")
    send(cs, ["e0", "e1", "e2", "e3"], partition_id="0")  # one batch: one enqueued time
    first = await eh_receive_async(cs, 5, starting_position="-1")
    assert [e.body_as_str() for e in first] == ["old", "e0", "e1", "e2", "e3"]
    old, e1 = first[0], first[2]
    cases = {
        "sequence number, exclusive": ({"starting_position": 2}, ["e2", "e3"]),
        "sequence number, inclusive": (
            {"starting_position": 2, "starting_position_inclusive": True},
            ["e1", "e2", "e3"],
        ),
        "offset, exclusive": ({"starting_position": e1.offset}, ["e2", "e3"]),
        "offset, inclusive": (
            {"starting_position": e1.offset, "starting_position_inclusive": True},
            ["e1", "e2", "e3"],
        ),
        "enqueued time in the past": (
            {"starting_position": datetime(2000, 1, 1, tzinfo=UTC)},
            ["old", "e0", "e1", "e2", "e3"],
        ),
        "enqueued time of old, exclusive": (
            {"starting_position": old.enqueued_time},
            ["e0", "e1", "e2", "e3"],
        ),
        "enqueued time of the batch, inclusive": (
            {"starting_position": e1.enqueued_time, "starting_position_inclusive": True},
            ["e0", "e1", "e2", "e3"],
        ),
    }
    # Consumers start in parallel: each SDK consumer needs ~2 s of connection handshakes.
    results = await asyncio.gather(
        *(eh_receive_async(cs, len(expected), **kwargs) for kwargs, expected in cases.values())
    )
    for (name, (_, expected)), events in zip(cases.items(), results, strict=True):
        assert [e.body_as_str() for e in events] == expected, name


@pytest.mark.asyncio
async def test_latest_only_sees_events_sent_after_the_consumer_started(emulator, cs, eh_receive_async):
    send(cs, ["before"], partition_id="0")
    partition = emulator.state().event_hub("hub1").partition("0")

    def send_once_attached() -> None:
        # "@latest" is resolved when the link attaches, which the SDK does after its
        # initialize callback: wait (bounded) until the emulator has the consumer.
        attached = threading.Event()
        for _ in range(100):
            if emulator.call(lambda: len(partition.listeners)) == 1:
                attached.set()
                break
            attached.wait(0.05)
        assert attached.is_set(), "consumer never attached"
        send(cs, ["after"], partition_id="0")

    events = await eh_receive_async(cs, 1, starting_position="@latest", on_ready=send_once_attached)
    assert [e.body_as_str() for e in events] == ["after"]


@pytest.mark.asyncio
async def test_receiving_without_a_partition_id_reads_every_partition(cs, eh_receive_async):
    send(cs, ["p0"], partition_id="0")
    send(cs, ["p1"], partition_id="1")
    events = await eh_receive_async(cs, 2, partition_id=None, starting_position="-1")
    assert sorted(e.body_as_str() for e in events) == ["p0", "p1"]


@pytest.mark.asyncio
async def test_consumer_groups_read_independently(cs, eh_receive_async):
    send(cs, ["a", "b"], partition_id="0")
    default, other = await asyncio.gather(
        eh_receive_async(cs, 2, starting_position="-1"),
        eh_receive_async(cs, 2, consumer_group="cg1", starting_position="-1"),
    )
    assert [e.body_as_str() for e in default] == [e.body_as_str() for e in other] == ["a", "b"]


@pytest.mark.asyncio
@pytest.mark.parametrize("new_owner_level", [1, 2], ids=["same", "higher"])
async def test_same_or_higher_owner_level_steals_the_partition(cs, eh_receive_async, new_owner_level):
    send(cs, ["x"], partition_id="0")
    low = AsyncEventHubConsumerClient.from_connection_string(
        cs, consumer_group="$Default", eventhub_name="hub1"
    )
    receiving, stolen = asyncio.Event(), asyncio.Event()
    errors: list[Exception] = []

    async def on_event(context, event):
        if event is not None:
            receiving.set()

    async def on_error(context, error):
        errors.append(error)
        stolen.set()

    task = asyncio.create_task(
        low.receive(
            on_event,
            partition_id="0",
            owner_level=1,
            starting_position="-1",
            on_error=on_error,
            max_wait_time=0.5,
        )
    )
    try:
        await asyncio.wait_for(receiving.wait(), 15)
        events = await eh_receive_async(cs, 1, starting_position="-1", owner_level=new_owner_level)
        await asyncio.wait_for(stolen.wait(), 15)
    finally:
        await low.close()
        task.cancel()
        await asyncio.wait([task], timeout=15)
    assert events[0].body_as_str() == "x"
    assert isinstance(errors[0], EventHubError)
    assert "owner level" in str(errors[0])


@pytest.mark.asyncio
async def test_last_enqueued_event_properties_are_tracked(cs):
    send(cs, ["a", "b", "c"], partition_id="0")
    client = AsyncEventHubConsumerClient.from_connection_string(
        cs, consumer_group="$Default", eventhub_name="hub1"
    )
    seen: list[dict] = []
    done = asyncio.Event()

    async def on_event(context, event):
        if event is not None:
            seen.append(context.last_enqueued_event_properties)
            done.set()

    task = asyncio.create_task(
        client.receive(
            on_event,
            partition_id="0",
            starting_position="-1",
            track_last_enqueued_event_properties=True,
            max_wait_time=0.5,
        )
    )
    try:
        await asyncio.wait_for(done.wait(), 15)
    finally:
        await client.close()
        task.cancel()
        await asyncio.wait([task], timeout=15)
    assert seen[0]["sequence_number"] == 2
    assert seen[0]["offset"] is not None
    assert seen[0]["enqueued_time"] is not None


@pytest.mark.timeout(30)
def test_events_older_than_retention_disappear(emulator_factory):
    emu = emulator_factory(
        {"namespaces": [{"name": "ns", "eventHubs": [{"name": "hub1", "retentionSeconds": 1}]}]}
    )
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


def test_a_namespace_announces_its_message_size_limit_and_refuses_a_larger_transfer(
    emulator_factory, eh_receive
):
    emu = emulator_factory(
        {"namespaces": [{"name": "ns", "maxMessageSizeBytes": 262144, "eventHubs": [{"name": "hub1"}]}]}
    )
    producer = EventHubProducerClient.from_connection_string(emu.connection_string(), eventhub_name="hub1")
    with producer:
        assert producer.create_batch().max_size_in_bytes == 262144
        # A client that ignores the announced limit (a batch made larger by hand) is refused by the broker.
        oversized = EventDataBatch(max_size_in_bytes=1024 * 1024, partition_id="0")
        oversized.add(EventData(b"x" * 300_000))
        with pytest.raises(EventHubError, match="exceeds the limit"):
            producer.send_batch(oversized)
        producer.send_batch([EventData(b"x" * 200_000)], partition_id="0")
    # Larger than a frame of proton's output buffer (16 KB): delivered whole.
    (received,) = eh_receive(emu.connection_string(), 1, starting_position="-1")
    assert received.body_as_str() == "x" * 200_000
