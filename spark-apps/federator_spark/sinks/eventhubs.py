"""Publishing to an event hub: partition mapping, size-bounded batches, retries; and the tail reads
effectively-once delivery needs.

Partition mapping (the replication patterns): with equal partition counts, source partition *i*
goes to target partition *i* and the partition key is kept as an annotation; otherwise keyed events
are sent with their partition key (the service hashes it, so a stream stays together) and keyless
events go to partition ``i mod n``, which keeps each source partition's keyless events in order.
Events for one destination are sent in arrival order, one batch after the other.

A producer client (its connection, and a link per partition it sent to) takes the Python SDK
0.5-1 s to open, so each Python worker keeps one per target event hub for its next tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from federator_spark.eventhubs_management import HubManagement
from federator_spark.events import Event
from federator_spark.plan import TargetPlan
from federator_spark.property_types import PropertyValue, for_amqp
from federator_spark.retry import with_retries
from federator_spark.sources.eventhubs import receive

logger = logging.getLogger(__name__)

_PARTITION_KEY = b"x-opt-partition-key"
_SYSTEM_PROPERTIES = ("message_id", "content_type", "correlation_id")
_FLUSH_EVENTS = 500  # per destination; bounds memory and keeps batches near the 1 MB limit
_SCAN_TIMEOUT_SECONDS = 30.0

Destination = tuple[str, str]  # ("partition", id) or ("key", partition key)

_producers: dict[tuple[str, str], tuple[Any, HubManagement]] = {}  # kept by this Python worker


def _transient() -> tuple[type[BaseException], ...]:
    from azure.eventhub.exceptions import ConnectionLostError, OperationTimeoutError

    return (ConnectionLostError, OperationTimeoutError)


def _producer(target: TargetPlan) -> tuple[Any, HubManagement]:
    """This worker's producer client for ``target`` and management reads through it."""
    from federator_spark.connections import eventhub_producer

    key = (target.connection.to_option(), target.entity)
    if key not in _producers:
        client = eventhub_producer(target.connection, target.entity)
        _producers[key] = (client, HubManagement(client))
    return _producers[key]


class EventHubPublisher:
    def __init__(self, target: TargetPlan) -> None:
        self.target = target
        self._client, management = _producer(target)
        self.partition_ids = management.partition_ids()
        self._pending: dict[Destination, list[Any]] = {}

    def add(self, event: Event, properties: Mapping[str, PropertyValue]) -> None:
        from azure.eventhub import EventData

        data = EventData(event.body)
        data.properties = for_amqp(properties)
        system = event.system_properties
        if system:  # each setter builds the AMQP properties section: set only what is there
            for name in _SYSTEM_PROPERTIES:
                if name in system:
                    setattr(data, name, system[name])
        destination = self._destination(event)
        if destination[0] == "partition" and event.partition_key is not None:
            data.raw_amqp_message.annotations[_PARTITION_KEY] = event.partition_key
        pending = self._pending.setdefault(destination, [])
        pending.append(data)
        if len(pending) >= _FLUSH_EVENTS:
            self._send(destination)

    def _destination(self, event: Event) -> Destination:
        count = len(self.partition_ids)
        if event.partition_count == count:
            return ("partition", event.partition)
        if event.partition_key is not None:
            return ("key", event.partition_key)
        return ("partition", self.partition_ids[int(event.partition) % count])

    def flush(self) -> None:
        for destination in list(self._pending):
            self._send(destination)

    def _send(self, destination: Destination) -> None:
        events = self._pending.pop(destination, [])
        kind, value = destination
        options = {"partition_id": value} if kind == "partition" else {"partition_key": value}
        batch = self._client.create_batch(**options)
        for data in events:
            try:
                batch.add(data)
            except ValueError:  # the batch is full: send it and start the next one
                self._send_batch(batch)
                batch = self._client.create_batch(**options)
                batch.add(data)
        if len(batch):
            self._send_batch(batch)

    def _send_batch(self, batch: Any) -> None:
        with_retries(lambda: self._client.send_batch(batch), _transient(), what=f"send to {self.target.name}")

    def close(self) -> None:
        """Unsent events are dropped; the client stays open for this worker's next task."""
        self._pending.clear()


def tails(target: TargetPlan) -> dict[str, int]:
    """The last sequence number of each partition of the target event hub."""
    _client, management = _producer(target)
    return management.last_sequence_numbers(management.partition_ids())


def published_sequences(
    target: TargetPlan, since: dict[str, int], source_partition: str, prefix: str
) -> set[int]:
    """Source sequence numbers of ``source_partition`` already at the target after ``since``, found by
    their ``repl-source-id`` (``<prefix><sequence>``). Reads every target partition: the mapping may
    have re-hashed them."""
    from federator_spark.provenance import SOURCE_ID_PROPERTY

    found: set[int] = set()
    now = tails(target)
    key = SOURCE_ID_PROPERTY.encode()
    for partition, last in now.items():
        start = since.get(partition, -1)
        if last <= start:
            continue
        for events in receive(
            target.connection,
            target.entity,
            "$Default",
            partition,
            start,
            inclusive=False,
            timeout=_SCAN_TIMEOUT_SECONDS,
            expected=last - start,
        ):
            for data in events:
                identity = (data.properties or {}).get(key)
                text = identity.decode() if isinstance(identity, bytes) else identity
                if text and text.startswith(prefix):
                    found.add(int(text[len(prefix) :]))
            if events and events[-1].sequence_number >= last:
                break
    logger.info(
        "target %s: %d events of source partition %s already published",
        target.name,
        len(found),
        source_partition,
    )
    return found
