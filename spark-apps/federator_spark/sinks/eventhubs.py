"""Publishing to an event hub: partition mapping, size-bounded batches, retries; and the tail reads
effectively-once delivery needs.

Partition mapping (the replication patterns): with equal partition counts, source partition *i*
goes to target partition *i* and the partition key is kept as an annotation; otherwise keyed events
are sent with their partition key (the service hashes it, so a stream stays together) and keyless
events go to partition ``i mod n``, which keeps each source partition's keyless events in order.
Events for one destination are sent in arrival order, one batch after the other: a batch is sent
on the publisher's sending thread while the task fills the next one, and the next is sent only once
the broker accepted the previous one (at most one batch in flight, so order holds without relying on
the link).

Events are encoded once, by ``sinks/amqp_encoding.py``; the producer clients, kept by each Python
worker and opened ahead of the first send, come from ``sinks/eventhubs_producers.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from federator_spark.events import Event
from federator_spark.plan import TargetPlan
from federator_spark.property_types import PropertyValue
from federator_spark.retry import with_retries
from federator_spark.sinks.amqp_encoding import PROPERTY_FIELDS, append, encode_event
from federator_spark.sinks.eventhubs_producers import prepare
from federator_spark.sinks.undeliverable import Undeliverable
from federator_spark.sources.eventhubs import receive, sequence_number

logger = logging.getLogger(__name__)

_FLUSH_EVENTS = 500  # per destination; bounds memory and keeps batches near the 1 MB limit
_SCAN_TIMEOUT_SECONDS = 30.0
# An encoded event is checked alone against an empty batch only past this size, half the smallest
# limit Event Hubs sets (256 KB, Basic tier): smaller events always fit, at no cost.
_CHECKED_ALONE_BYTES = 128 * 1024

Destination = tuple[str, str]  # ("partition", id) or ("key", partition key)


def _transient() -> tuple[type[BaseException], ...]:
    from azure.eventhub.exceptions import ConnectionLostError, OperationTimeoutError

    return (ConnectionLostError, OperationTimeoutError)


class EventHubPublisher:
    def __init__(self, target: TargetPlan) -> None:
        self.target = target
        self._producer = prepare(target)
        self._client = self._producer.client
        self.partition_ids = self._producer.partition_ids()
        self._pending: dict[Destination, list[bytes]] = {}
        self._sending = ThreadPoolExecutor(1, thread_name_prefix=f"eventhubs-send-{target.name}")
        self._in_flight: Future[None] | None = None

    def add(self, event: Event, properties: Mapping[str, PropertyValue]) -> None:
        """Queue ``event`` for its destination; raises :class:`Undeliverable` for an event over the
        hub's message size limit."""
        system = event.system_properties
        if system:
            system = {name: system[name] for name in PROPERTY_FIELDS if name in system}
        destination = self._destination(event)
        # The key travels with every event, also to a fixed partition: consumers and the next hop read it.
        encoded = encode_event(event.body, properties, system, event.partition_key)
        if len(encoded) > _CHECKED_ALONE_BYTES:
            self._check_alone(destination, encoded)
        pending = self._pending.setdefault(destination, [])
        pending.append(encoded)
        if len(pending) >= _FLUSH_EVENTS:
            self._send(destination)

    def _check_alone(self, destination: Destination, encoded: bytes) -> None:
        self._producer.ready()
        batch = self._client.create_batch(**_batch_options(destination))
        if not append(batch, encoded):
            raise Undeliverable(
                f"an event of {len(encoded)} bytes exceeds the message size limit of event hub "
                f"{self.target.entity} ({batch.max_size_in_bytes} bytes)"
            )

    def _destination(self, event: Event) -> Destination:
        count = len(self.partition_ids)
        if event.partition_count == count:
            return ("partition", event.partition)
        if event.partition_key is not None:
            return ("key", event.partition_key)
        return ("partition", self.partition_ids[int(event.partition) % count])

    def flush(self) -> None:
        """Send every pending event and wait until the broker accepted all (raises a send's error)."""
        for destination in list(self._pending):
            self._send(destination)
        self._accepted()

    def _send(self, destination: Destination) -> None:
        self._producer.ready()
        events = self._pending.pop(destination, [])
        options = _batch_options(destination)
        batch = self._client.create_batch(**options)
        for encoded in events:
            while not append(batch, encoded):  # the batch is full: send it and start the next one
                if not len(batch):  # add() refuses such events; only a limit under _CHECKED_ALONE_BYTES
                    raise ValueError(f"an event of {len(encoded)} bytes exceeds the batch size limit")
                self._send_batch(batch)
                batch = self._client.create_batch(**options)
        if len(batch):
            self._send_batch(batch)

    def _send_batch(self, batch: Any) -> None:
        self._accepted()
        self._in_flight = self._sending.submit(self._send_with_retries, batch)

    def _send_with_retries(self, batch: Any) -> None:
        with_retries(lambda: self._client.send_batch(batch), _transient(), what=f"send to {self.target.name}")

    def _accepted(self) -> None:
        """Wait for the batch in flight; its error (after retries) is raised here."""
        if self._in_flight is not None:
            in_flight, self._in_flight = self._in_flight, None
            in_flight.result()

    def close(self) -> None:
        """Unsent events are dropped; a batch still in flight (the task failed before ``flush``) is
        waited for, not raised again. The client stays open for this worker's next task."""
        self._pending.clear()
        self._in_flight = None
        self._sending.shutdown(wait=True)


def _batch_options(destination: Destination) -> dict[str, str]:
    kind, value = destination
    return {"partition_id": value} if kind == "partition" else {"partition_key": value}


def tails(target: TargetPlan) -> dict[str, int]:
    """The last sequence number of each partition of the target event hub."""
    producer = prepare(target)
    return producer.management.last_sequence_numbers(producer.partition_ids())


def published_sequences(
    target: TargetPlan, since: dict[str, int], source_partition: str, prefix: str
) -> set[int]:
    """Source sequence numbers of ``source_partition`` already at the target after ``since``, found by
    their ``repl-source-id`` (``<prefix><sequence>``). Reads every target partition: the mapping may
    have re-hashed them."""
    from federator_contract.checks.names import SOURCE_ID_PROPERTY

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
            for message in events:
                identity = (message.application_properties or {}).get(key)
                text = identity.decode() if isinstance(identity, bytes) else identity
                if text and text.startswith(prefix):
                    found.add(int(text[len(prefix) :]))
            if events and sequence_number(events[-1]) >= last:
                break
    logger.info(
        "target %s: %d events of source partition %s already published",
        target.name,
        len(found),
        source_partition,
    )
    return found
