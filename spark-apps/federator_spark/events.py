"""The row shape sources produce and sinks consume, and its view as a SQL message."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from federator.sql import SqlMessage

# One row per source event. `source` names the source entity (`<host>/<entity>`) so that sinks can
# build provenance and identities without knowing the source; `partition_count` lets an Event Hubs
# sink decide between partition i → i and re-hashing.
SCHEMA = (
    "body binary, source string, partition string, partition_count int, sequence_number bigint, "
    "offset string, enqueued_time timestamp, partition_key string, "
    "properties map<string,string>, system_properties map<string,string>"
)

# Event Hubs / AMQP property names → the Service Bus system property names conditions use.
_SYSTEM_NAMES = {
    "message_id": "MessageId",
    "content_type": "ContentType",
    "correlation_id": "CorrelationId",
    "subject": "Label",
    "to": "To",
    "reply_to": "ReplyTo",
}


@dataclass
class Event:
    body: bytes
    source: str
    partition: str
    partition_count: int
    sequence_number: int
    offset: str
    enqueued_time: datetime
    partition_key: str | None
    properties: dict[str, str] = field(default_factory=dict)
    system_properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Any) -> Event:
        enqueued = row["enqueued_time"]
        if enqueued.tzinfo is None:  # Spark hands timestamps back as naive local times
            enqueued = enqueued.astimezone(UTC)
        return cls(
            body=bytes(row["body"]),
            source=row["source"],
            partition=row["partition"],
            partition_count=row["partition_count"],
            sequence_number=row["sequence_number"],
            offset=row["offset"],
            enqueued_time=enqueued,
            partition_key=row["partition_key"],
            properties=dict(row["properties"] or {}),
            system_properties=dict(row["system_properties"] or {}),
        )

    @property
    def identity(self) -> str:
        """Stable across replays: the Service Bus MessageId and the dedupe key at an Event Hubs target."""
        return f"{self.source}/{self.partition}/{self.sequence_number}"

    def sql_message(self) -> SqlMessage:
        system: dict[str, Any] = {
            name: self.system_properties[key]
            for key, name in _SYSTEM_NAMES.items()
            if key in self.system_properties
        }
        system["SequenceNumber"] = self.sequence_number
        system["EnqueuedTimeUtc"] = self.enqueued_time
        if self.partition_key is not None:
            system["PartitionKey"] = self.partition_key
        return SqlMessage(system=system, user=dict(self.properties), body=_json_or_none(self.body))


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
