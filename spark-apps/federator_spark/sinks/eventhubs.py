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
worker and opened ahead of the first send, come from ``sinks/eventhubs_producers.py``. A send that fails
for want of the broker is tried again until it succeeds (``outages.py``); with effectively-once delivery
the publisher first reads back what the failed attempt may have delivered (``sinks/replay.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from federator_spark.events import Event
from federator_spark.outages import Endpoint, retrying
from federator_spark.plan import TargetPlan
from federator_spark.property_types import PropertyValue
from federator_spark.sinks.amqp_encoding import append, encode_message
from federator_spark.sinks.eventhubs_producers import prepare
from federator_spark.sinks.undeliverable import Undeliverable
from federator_spark.sources.eventhubs import receive, sequence_number

if TYPE_CHECKING:
    from federator_spark.sinks.replay import ReplayGuard

logger = logging.getLogger(__name__)

_FLUSH_EVENTS = 500  # per destination; bounds memory and keeps batches near the 1 MB limit
_SCAN_TIMEOUT_SECONDS = 30.0
# An encoded event is checked alone against an empty batch only past this size, half the smallest
# limit Event Hubs sets (256 KB, Basic tier): smaller events always fit, at no cost.
_CHECKED_ALONE_BYTES = 128 * 1024
# The system properties of a source that travel with an event to an event hub.
_SYSTEM_PROPERTIES = ("message_id", "correlation_id", "content_type")

Destination = tuple[str, str]  # ("partition", id) or ("key", partition key)
Encoded = tuple[int, bytes]  # the source sequence number and the encoded event


class EventHubPublisher:
    """``guard``: effectively-once delivery (sends wait for its intent, and a failed send is read back
    before it is tried again); ``status_file``: where an outage of the target is reported."""

    def __init__(
        self, target: TargetPlan, guard: ReplayGuard | None = None, status_file: str | None = None
    ) -> None:
        self.target = target
        self._producer = prepare(target)
        self._client = self._producer.client
        self._guard = guard
        self._endpoint = Endpoint("target", target.name, status_file)
        self.partition_ids = retrying(
            self._producer.partition_ids, self._endpoint, f"listing {target.entity}"
        )
        self._pending: dict[Destination, list[Encoded]] = {}
        self._sending = ThreadPoolExecutor(1, thread_name_prefix=f"eventhubs-send-{target.name}")
        self._in_flight: Future[None] | None = None

    def add(self, event: Event, properties: Mapping[str, PropertyValue]) -> None:
        """Queue ``event`` for its destination; raises :class:`Undeliverable` for an event over the
        hub's message size limit."""
        system = event.system_properties
        if system:
            system = {name: system[name] for name in _SYSTEM_PROPERTIES if name in system}
        destination = self._destination(event)
        # The key travels with every event, also to a fixed partition: consumers and the next hop read it.
        encoded = encode_message(event.body, properties, system, event.partition_key)
        if len(encoded) > _CHECKED_ALONE_BYTES:
            self._check_alone(destination, encoded)
        pending = self._pending.setdefault(destination, [])
        pending.append((event.sequence_number, encoded))
        if len(pending) >= _FLUSH_EVENTS:
            self._send(destination)

    def _new_batch(self, destination: Destination) -> Any:
        """An empty batch (the SDK asks the broker for the size limit once, opening a link)."""
        options = _batch_options(destination)
        return retrying(
            lambda: self._client.create_batch(**options), self._endpoint, f"opening {self.target.entity}"
        )

    def _check_alone(self, destination: Destination, encoded: bytes) -> None:
        self._producer.ready()
        batch = self._new_batch(destination)
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
        while events:
            batch, sent, events = self._fill(destination, events)
            self._accepted()
            self._in_flight = self._sending.submit(self._deliver, destination, batch, sent)

    def _fill(
        self, destination: Destination, events: list[Encoded]
    ) -> tuple[Any, list[Encoded], list[Encoded]]:
        """The next batch (as many events as fit), its events, and the rest."""
        batch = self._new_batch(destination)
        for index, (_sequence, encoded) in enumerate(events):
            if not append(batch, encoded):
                if not index:  # add() refuses such events; only a limit under _CHECKED_ALONE_BYTES
                    raise ValueError(f"an event of {len(encoded)} bytes exceeds the batch size limit")
                return batch, events[:index], events[index:]
        return batch, events, []

    def _deliver(self, destination: Destination, batch: Any, events: list[Encoded]) -> None:
        """On the sending thread: send one batch, until the broker accepts it."""
        guard = self._guard
        if guard is not None:
            guard.wait_armed()

        def read_back() -> None:  # effectively-once: the failed attempt may have been delivered
            nonlocal batch
            if guard is None:
                return
            kind, value = destination
            found = guard.recheck(self.target.name, value if kind == "partition" else None)
            batch = self._new_batch(destination)
            for sequence, encoded in events:
                if sequence not in found:
                    append(batch, encoded)

        def send() -> None:
            if len(batch):
                self._client.send_batch(batch)

        retrying(send, self._endpoint, f"sending to {self.target.entity}", before_retry=read_back)

    def _accepted(self) -> None:
        """Wait for the batch in flight; its error (a refusal, or not the broker's) is raised here."""
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


def published_sequences(target: TargetPlan, since: dict[str, int], prefix: str) -> set[int]:
    """Source sequence numbers already at the target after ``since`` (target partition → last sequence
    number then), found by their ``repl-source-id`` (``<prefix><sequence>``)."""
    from federator_contract.names import SOURCE_ID_PROPERTY

    found: set[int] = set()
    now = prepare(target).last_sequence_numbers(sorted(since, key=int))
    key = SOURCE_ID_PROPERTY.encode()
    for partition, last in now.items():
        start = since[partition]
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
    logger.info("target %s: %d events from %s* found after %s", target.name, len(found), prefix, since)
    return found
