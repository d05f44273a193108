"""A small batch is written by one Spark task, whatever its partitions: each task costs the application CPU
however little it holds, and ten quiet members' batches of two tasks each saturated two cores. That task
reads every event of the batch once, in sequence order within each partition; a larger batch is spread
over the task slots as before."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from azure.eventhub import EventData, EventHubProducerClient

from federator_emulator.server import RunningEmulator
from federator_spark.connections import Connection
from federator_spark.sources import eventhubs_streams
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.eventhubs_slices import SMALL_BATCH_EVENTS, EventHubsSliceReader, SliceGroup

PARTITIONS = 4
CONFIG = {"namespaces": [{"name": "ns1", "eventHubs": [{"name": "hub", "partitionCount": PARTITIONS}]}]}
CONNECTION = Connection(connection_string="Endpoint=sb://h/;SharedAccessKeyName=k;SharedAccessKey=v")


def reader_of(connection: Connection, slots: int = 2) -> EventHubsSliceReader:
    reader = EventHubsSliceReader(HubSourceSettings(connection, "hub", slice_tasks=slots))
    reader._partition_count = PARTITIONS
    return reader


def planned_slices(group: SliceGroup) -> list[tuple[str, int, int]]:
    return [(part.partition_id, part.start, part.end) for part in group.slices]


def test_a_small_batch_of_four_partitions_is_one_task_in_partition_order() -> None:
    start = {"3": 9, "1": -1, "0": 4, "2": 0}
    end = {"3": 14, "1": 4, "0": 9, "2": 5}  # five events in each partition

    planned = reader_of(CONNECTION).partitions(start, end)

    assert len(planned) == 1 and isinstance(planned[0], SliceGroup)
    assert planned_slices(planned[0]) == [("0", 4, 9), ("1", -1, 4), ("2", 0, 5), ("3", 9, 14)]


def test_a_batch_of_the_small_size_is_one_task_and_one_event_more_is_spread_over_the_slots() -> None:
    reader = reader_of(CONNECTION)
    start = dict.fromkeys(map(str, range(PARTITIONS)), -1)
    quarter = SMALL_BATCH_EVENTS // PARTITIONS
    end = {p: quarter - 1 for p in start}

    assert len(reader.partitions(start, end)) == 1
    assert len(reader.partitions(start, {**end, "0": quarter})) == 2


def test_a_small_batch_with_one_partition_to_read_is_one_task() -> None:
    planned = reader_of(CONNECTION).partitions({"0": 7, "1": 3}, {"0": 7, "1": 5})

    assert [planned_slices(group) for group in planned if isinstance(group, SliceGroup)] == [[("1", 3, 5)]]


@pytest.fixture
def hub(emulator_factory: Callable[..., RunningEmulator]) -> Iterator[tuple[Connection, RunningEmulator]]:
    emulator = emulator_factory(CONFIG)
    before = set(threading.enumerate())
    yield Connection(connection_string=emulator.connection_string("ns1")), emulator
    for stream in list(eventhubs_streams._kept.values()):  # the streams the task kept for later ones
        stream.close(wait=True)
    eventhubs_streams._kept.clear()
    for thread in set(threading.enumerate()) - before:  # closed streams end on threads of their own
        if thread.name != "eventhubs-reaper":
            thread.join(10)


def publish(emulator: RunningEmulator, per_partition: int) -> None:
    cs = emulator.connection_string("ns1")
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub") as producer:
        for partition in range(PARTITIONS):
            batch = producer.create_batch(partition_id=str(partition))
            for index in range(per_partition):
                batch.add(EventData(f"p{partition}-e{index}"))
            producer.send_batch(batch)


@pytest.mark.slow  # a receiver per partition takes the SDK about a second to open
def test_the_one_task_of_a_small_batch_reads_every_event_once_in_order_per_partition(
    hub: tuple[Connection, RunningEmulator],
) -> None:
    connection, emulator = hub
    publish(emulator, 5)
    reader = reader_of(connection)
    start = dict.fromkeys(map(str, range(PARTITIONS)), -1)
    end = {p: 4 for p in start}

    (group,) = reader.partitions(start, end)
    rows = [
        dict(zip(("partition", "partition_count", "start", "end"), row, strict=True))
        for row in reader.read(group)
    ]
    read = [
        (event.partition, event.sequence_number, event.body.decode())
        for events in reader.events_by_partition(rows)
        for event in events
    ]

    assert read == [(str(p), index, f"p{p}-e{index}") for p in range(PARTITIONS) for index in range(5)]
