"""An application consumer as users write it: the unmodified ``azure-eventhub`` EventProcessor with the
unmodified ``BlobCheckpointStore`` (Azurite), plus producers and the independent counts the translation
tests compare against."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore

SOURCE_ID = "repl-source-id"


def produce_rounds(connection: str, hub: str, rounds: range, partitions: int) -> None:
    """Round by round, one event per partition: ``round``, ``partition`` in its properties."""
    with EventHubProducerClient.from_connection_string(connection, eventhub_name=hub) as producer:
        for number in rounds:
            for partition in range(partitions):
                batch = producer.create_batch(partition_id=str(partition))
                event = EventData(f"{partition}:{number}")
                event.properties = {"round": number}
                batch.add(event)
                producer.send_batch(batch)


@dataclass
class Consumed:
    """What one consumer run processed: per event its origin, and per source partition the sequence of
    its last checkpoint."""

    origins: list[str] = field(default_factory=list)  # `<partition>/<sequence>` of the source event
    checkpointed: dict[str, int] = field(default_factory=dict)

    def after_checkpoints(self) -> set[str]:
        """Processed, but after the partition's last checkpoint: what a resumed consumer sees again."""
        return {
            origin
            for origin in self.origins
            if int(origin.split("/")[1]) > self.checkpointed.get(origin.split("/")[0], -1)
        }


def consume(
    connection: str,
    hub: str,
    group: str,
    store: tuple[str, str],
    *,
    stop_at: dict[str, int] | None = None,
    checkpoint_every: int = 5,
    origin_of: str = "source",
    idle_seconds: float = 4.0,
    timeout: float = 90.0,
) -> Consumed:
    """Run an EventProcessor with a BlobCheckpointStore (``store``: connection string, container) until
    each partition processed ``stop_at[partition]`` events (then it stops, as a crashing consumer would:
    the events since its last checkpoint are processed but not checkpointed), or, without ``stop_at``,
    until nothing arrived for ``idle_seconds``. Without a checkpoint it starts at the SDK's default,
    `@latest`: a resumed consumer that finds no translated checkpoint reads nothing.

    ``origin_of``: ``source`` names each event by its own partition and sequence number, ``copy`` by the
    `repl-source-id` it carries (a copy on the target)."""
    consumed = Consumed()
    counts: Counter[str] = Counter()
    done = threading.Event()
    last_event = [time.monotonic()]
    lock = threading.Lock()
    checkpoint_store = BlobCheckpointStore.from_connection_string(store[0], store[1])
    client = EventHubConsumerClient.from_connection_string(
        connection, consumer_group=group, eventhub_name=hub, checkpoint_store=checkpoint_store
    )

    def on_event(context, event):
        partition = context.partition_id
        with lock:
            if stop_at is not None and counts[partition] >= stop_at.get(partition, 0):
                return
            counts[partition] += 1
            last_event[0] = time.monotonic()
            if origin_of == "source":
                consumed.origins.append(f"{partition}/{event.sequence_number}")
            else:
                consumed.origins.append(str(event.properties[SOURCE_ID.encode()].decode()).split("/", 2)[2])
            if counts[partition] % checkpoint_every == 0:
                context.update_checkpoint(event)
                consumed.checkpointed[partition] = event.sequence_number
            if stop_at is not None and all(counts[p] >= n for p, n in stop_at.items()):
                done.set()

    thread = threading.Thread(
        target=client.receive,
        kwargs={"on_event": on_event, "starting_position": "-1" if stop_at else "@latest"},
    )
    thread.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not done.is_set():
            if stop_at is None and counts and time.monotonic() - last_event[0] > idle_seconds:
                break
            time.sleep(0.2)
    finally:
        client.close()
        thread.join(30)
    if stop_at is not None:
        assert done.is_set(), f"the consumer processed {dict(counts)}, not {stop_at}"
    return consumed


def read_partition(connection: str, hub: str, partition: str, count: int) -> list[EventData]:
    """The first ``count`` events of a partition, in order."""
    events: list[EventData] = []
    done = threading.Event()

    def on_event(context, event):
        if event is not None and len(events) < count:
            events.append(event)
            if len(events) == count:
                done.set()

    client = EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name=hub
    )
    thread = threading.Thread(
        target=client.receive,
        kwargs={"on_event": on_event, "partition_id": partition, "starting_position": "-1"},
    )
    thread.start()
    try:
        assert done.wait(60), f"partition {partition}: {len(events)} of {count} events"
    finally:
        client.close()
        thread.join(30)
    return events


def copy_with_provenance(
    source: str, target: str, hub: str, source_partitions: int, target_partitions: int, per_partition: int
) -> dict[str, list[str]]:
    """Copy every source partition to partition ``p mod target_partitions`` as the replication app
    does (with ``repl-source-id``), interleaving the source partitions that share a target partition
    event by event, in the order they were produced. Returns each target partition's origins in order."""
    from federator_spark.connections import Connection

    host = Connection(connection_string=source).host
    read = {str(p): read_partition(source, hub, str(p), per_partition) for p in range(source_partitions)}
    copied: dict[str, list[str]] = {str(t): [] for t in range(target_partitions)}
    with EventHubProducerClient.from_connection_string(target, eventhub_name=hub) as producer:
        for position in range(per_partition):
            for partition, events in read.items():
                event = events[position]
                destination = str(int(partition) % target_partitions)
                copy = EventData(event.body_as_str())
                origin = f"{partition}/{event.sequence_number}"
                copy.properties = {SOURCE_ID: f"{host}/{hub}/{origin}"}
                batch = producer.create_batch(partition_id=destination)
                batch.add(copy)
                producer.send_batch(batch)
                copied[destination].append(origin)
    return copied
