"""What the Service Bus source keeps of a received message (a spool record: content, not the lock),
and the row of :data:`federator_spark.events.SCHEMA` a record becomes."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from federator_spark import property_types
from federator_spark.events import SERVICE_BUS, SOURCE_KIND
from federator_spark.property_types import as_text
from federator_spark.sources.spool import Record

# Every message of a Service Bus source is in Spark partition "0" of a 1-partition source: a batch is
# one spool file, written in one task, in receive order.
PARTITION = "0"
# The AMQP properties a record keeps, named as the SDK's message properties are (the AMQP names are the same).
_SYSTEM = ("message_id", "content_type", "correlation_id", "subject", "to", "reply_to")


def enqueued(message: Any) -> datetime:
    enqueued: datetime | None = message.enqueued_time_utc
    return enqueued if enqueued is not None else datetime.now(UTC)


def _body(message: Any) -> bytes:
    """Data sections as they are; an AMQP value or sequence body (not sent by the Azure SDKs) as text or
    JSON."""
    from azure.servicebus.amqp import AmqpMessageBodyType

    body = message.body
    if message.body_type == AmqpMessageBodyType.DATA:
        return body if isinstance(body, bytes) else b"".join(body)
    if message.body_type == AmqpMessageBodyType.SEQUENCE:
        body = list(body)
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, default=as_text).encode()


def to_record(message: Any) -> Record:
    """What the spool keeps of a message: the row's content, not its lock.

    The AMQP properties are read from the raw message once: each of the SDK's message properties lists
    them all again first (55 → 31 µs a message for this function), and decodes text as :func:`as_text`
    does anyway."""
    properties, types = property_types.read(message.application_properties)
    fields = message.raw_amqp_message.properties
    system = {}
    if fields is not None:
        system = {name: as_text(value) for name in _SYSTEM if (value := getattr(fields, name)) is not None}
    system[SOURCE_KIND] = SERVICE_BUS
    session = fields.group_id if fields is not None else None
    if message.time_to_live is not None:
        system["time_to_live"] = f"{message.time_to_live.total_seconds():g}"
    return {
        "sequence_number": message.sequence_number,
        "body": base64.b64encode(_body(message)).decode("ascii"),
        "enqueued_time": enqueued(message).timestamp(),
        # Sessions define order in Service Bus; a PartitionKey equals the SessionId when both are set.
        "partition_key": as_text(session) if session else message.partition_key,
        "properties": properties,
        "system_properties": system,
        "property_types": types,
    }


def to_row(record: Record, source: str) -> tuple[Any, ...]:
    """A spool record as a row of :data:`federator_spark.events.SCHEMA`."""
    sequence = record["sequence_number"]
    return (
        base64.b64decode(record["body"]),
        source,
        PARTITION,
        1,
        sequence,
        str(sequence),  # Service Bus has no offsets; the sequence number stands in for provenance
        datetime.fromtimestamp(record["enqueued_time"], UTC),
        record["partition_key"],
        record["properties"],
        record["system_properties"],
        record.get("property_types", {}),  # spooled before types were kept: text, as then
    )
