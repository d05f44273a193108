"""Event Hubs links: producers, partition consumers (with owner level), ``$management`` READ."""

from __future__ import annotations

import itertools
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from proton import Delivery, Link, symbol, timestamp

from federator_emulator.amqp import codec, splice
from federator_emulator.amqp.endpoints import (
    LINK_STOLEN,
    NOT_FOUND,
    UNAUTHORIZED,
    ConnectionContext,
    Endpoint,
    accept,
    decode_request,
    reject,
    reply,
    source_filters,
)
from federator_emulator.auth import management_node, missing_claim
from federator_emulator.state.eventhubs import EventHub, PartitionLog, UnknownEntity

logger = logging.getLogger(__name__)

PARTITION_KEY = symbol("x-opt-partition-key")
EPOCH = symbol("com.microsoft:epoch")
SELECTOR_FILTER = symbol("apache.org:selector-filter:string")
_SELECTOR = re.compile(r"amqp\.annotation\.x-opt-(offset|sequence-number|enqueued-time)\s*(>=|>)\s*'([^']*)'")


class Producer(Endpoint):
    """Client sender to ``<hub>`` or ``<hub>/Partitions/<id>``."""

    def __init__(
        self, ctx: ConnectionContext, link: Link, hub: EventHub, partition: PartitionLog | None
    ) -> None:
        super().__init__(ctx, link)
        self.hub = hub
        self.partition = partition

    def on_message(self, delivery: Delivery, payload: bytes) -> None:
        try:
            batch = codec.split_batch(payload)
        except codec.CodecError as exc:
            reject(delivery, "amqp:decode-error", str(exc))
            return
        envelope, events = batch if batch is not None else ([], [payload])
        partition = self.partition or self.hub.route(
            _partition_key(envelope or list(codec.iter_sections(payload)))
        )
        self.namespace.publish_events(partition, self.hub.name, events)
        self.namespace.journal.commit()
        accept(delivery)


def _partition_key(sections: list[tuple[int, bytes]]) -> str | None:
    for code, raw in sections:
        if code == codec.MESSAGE_ANNOTATIONS:
            key = codec.decode_section(raw).get(PARTITION_KEY)
            return None if key is None else str(key)
    return None


@dataclass(frozen=True)
class StartingPosition:
    field: str  # "offset", "sequence-number" or "enqueued-time"
    inclusive: bool
    value: str

    def resolve(self, log: PartitionLog) -> int:
        """The first sequence number to deliver."""
        if self.field == "offset":
            if self.value == "-1":
                return log.begin_sequence_number
            if self.value == "@latest":
                return log.next_sequence_number
            return log.clamp(log.first_after_offset(int(self.value), self.inclusive))
        if self.field == "sequence-number":
            return log.clamp(int(self.value) + (0 if self.inclusive else 1))
        return log.clamp(log.first_after_time(int(self.value), self.inclusive))


def parse_starting_position(filters: Any) -> StartingPosition:
    """Read the selector filter the SDK sends; no filter means the start of the partition."""
    for value in (filters or {}).values():
        expression = getattr(value, "value", value)
        match = _SELECTOR.search(str(expression))
        if match:
            return StartingPosition(match.group(1), match.group(2) == ">=", match.group(3))
    return StartingPosition("offset", False, "-1")


class ConsumerRegistry:
    """Active consumers per (hub, consumer group, partition), to enforce owner levels."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, str], list[Consumer]] = {}

    def admit(self, key: tuple[str, str, str], consumer: Consumer) -> str | None:
        """Register the consumer, stealing from those of the same or a lower owner level (as Event Hubs
        does: a load balancer's new owner reopens with the level the old one had); returns a refusal
        reason instead when a receiver of a higher level, or any level for a consumer without one, holds
        the partition."""
        current = self._by_key.setdefault(key, [])
        strongest = max((c.epoch for c in current if c.epoch is not None), default=None)
        if strongest is not None and (consumer.epoch is None or consumer.epoch < strongest):
            return f"a receiver with a higher owner level ({strongest}) already exists"
        if consumer.epoch is not None:
            for other in [c for c in current if c.epoch is None or c.epoch <= consumer.epoch]:
                # Detaching unregisters it (Consumer.on_close).
                other.detach(
                    LINK_STOLEN,
                    f"a receiver with the same or a higher owner level ({consumer.epoch}) was created",
                )
        current.append(consumer)
        return None

    def remove(self, key: tuple[str, str, str], consumer: Consumer) -> None:
        current = self._by_key.get(key, [])
        if consumer in current:
            current.remove(consumer)


class Consumer(Endpoint):
    """Client receiver from ``<hub>/ConsumerGroups/<cg>/Partitions/<id>``; deliveries are pre-settled.

    The SDK never settles events, so unsettled deliveries would pile up in proton forever.
    """

    def __init__(
        self,
        ctx: ConnectionContext,
        link: Link,
        log: PartitionLog,
        registry: ConsumerRegistry,
        key: tuple[str, str, str],
    ) -> None:
        super().__init__(ctx, link)
        self.log = log
        self.registry = registry
        self.key = key
        epoch = (link.remote_properties or {}).get(EPOCH)
        self.epoch: int | None = None if epoch is None else int(epoch)
        self.next_sequence_number = parse_starting_position(source_filters(link)).resolve(log)

    def start(self) -> str | None:
        refusal = self.registry.admit(self.key, self)
        if refusal is None:
            self.log.listeners.append(self._on_partition)
        return refusal

    def _on_partition(self, _log: PartitionLog) -> None:
        self.on_flow()

    def on_flow(self) -> None:
        log, credit = self.log, self.link.credit
        if credit <= 0 or self.next_sequence_number >= log.next_sequence_number:
            return
        metrics = _runtime_metrics(log)
        events = log.read(self.next_sequence_number, credit)
        for delivery in zip(
            itertools.count(events.first_sequence_number),
            events.offsets,
            events.enqueued_times_ms,
            events.payloads,
            strict=False,  # count() is endless
        ):
            self.send_settled(splice.delivered_event(*delivery, metrics))
        self.next_sequence_number = events.next_sequence_number

    def on_close(self) -> None:
        self.registry.remove(self.key, self)
        if self._on_partition in self.log.listeners:
            self.log.listeners.remove(self._on_partition)


def _runtime_metrics(log: PartitionLog) -> bytes:
    """Delivery annotations for ``track_last_enqueued_event_properties``.

    Proton cannot show us the link's desired capabilities, so they are always sent; the SDK
    only reads them when tracking is on.
    """
    last = log.last()
    if last is None:
        return b""
    entries = (
        splice.LAST_SEQUENCE_NUMBER
        + splice.encode_long(last.sequence_number)
        + splice.LAST_OFFSET
        + splice.encode_string(str(last.offset))
        + splice.LAST_TIME
        + splice.encode_timestamp(last.enqueued_time_ms)
        + splice.RETRIEVAL_TIME
        + splice.encode_timestamp(int(time.time() * 1000))
    )
    return splice.delivery_annotations_section(entries, 8)


class Management(Endpoint):
    """The ``$management`` node: READ of hub and partition properties."""

    def on_message(self, delivery: Delivery, payload: bytes) -> None:
        accept(delivery)
        request = decode_request(payload)
        props = codec.own(request.properties or {})
        name = str(props.get("name", ""))
        # Any claim on the hub reads it (producers read the partition ids before they send); a token
        # whose principal has no role there is refused.
        node = management_node(name)
        if not any(self.ctx.grants.allows(node, right) for right in ("Send", "Listen")):
            resource = f"sb://{self.link.connection.hostname or 'localhost'}/{name}/$management"
            refusal = missing_claim("Send' or 'Listen", resource)  # "'Send' or 'Listen' claim(s) are …"
            reply(self.ctx, self.link, request, 401, refusal, error=UNAUTHORIZED)
            return
        try:
            hub = self.namespace.event_hub(name)
            if props.get("type") == "com.microsoft:partition":
                body = _partition_properties(hub, hub.partition(str(props.get("partition"))))
            else:
                body = {
                    "name": hub.name,
                    "type": "com.microsoft:eventhub",
                    "created_at": timestamp(hub.created_at_ms),
                    "partition_count": len(hub.partitions),
                    "partition_ids": list(hub.partitions),
                }
        except UnknownEntity as exc:
            reply(self.ctx, self.link, request, 404, str(exc), error=NOT_FOUND)
            return
        reply(self.ctx, self.link, request, 200, "OK", body=body)


def _partition_properties(hub: EventHub, log: PartitionLog) -> dict[str, Any]:
    last = log.last()
    return {
        "name": hub.name,
        "type": "com.microsoft:partition",
        "partition": log.partition_id,
        "begin_sequence_number": log.begin_sequence_number,
        "last_enqueued_sequence_number": last.sequence_number if last else -1,
        "last_enqueued_offset": str(last.offset) if last else "-1",
        "last_enqueued_time_utc": timestamp(last.enqueued_time_ms if last else 0),
        "is_partition_empty": last is None,
    }
