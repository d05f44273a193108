"""The row shape sources produce and sinks consume (its view as a SQL message is ``event_messages``: a
source's planning process imports this module and never needs the SQL engine)."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from federator_spark.property_types import still_tagged, typed

# One row per source event. `source` names the source entity (`<host>/<entity>`) so that sinks can
# build provenance and identities without knowing the source; `partition_count` lets an Event Hubs
# sink decide between partition i → i and re-hashing. `property_types` tags the property values that
# were not strings at the source (`federator_spark.property_types`).
SCHEMA = (
    "body binary, source string, partition string, partition_count int, sequence_number bigint, "
    "offset string, enqueued_time timestamp, partition_key string, "
    "properties map<string,string>, system_properties map<string,string>, property_types map<string,string>"
)

# System property a source sets to say what it reads; Service Bus rows carry SERVICE_BUS.
SOURCE_KIND = "source_kind"
SERVICE_BUS = "serviceBus"
_MAX_MESSAGE_ID = 128  # Service Bus's limit

_UNDECODED: Any = object()


class NotJson(ValueError):
    """The body is not a JSON document."""


@dataclass
class Event:
    """One event. Editors treat it as immutable: a change is a new Event (:meth:`edited`)."""

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
    property_types: dict[str, str] = field(default_factory=dict)
    # The decoded JSON body once something asked for it, or why it is not JSON.
    _document: Any = field(default=_UNDECODED, init=False, repr=False, compare=False)
    _not_json: str | None = field(default=None, init=False, repr=False, compare=False)

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
            property_types=dict(row["property_types"] or {}),
        )

    def as_row(self) -> tuple[Any, ...]:
        """The row of :data:`SCHEMA` (what :meth:`from_row` reads back)."""
        return (
            self.body,
            self.source,
            self.partition,
            self.partition_count,
            self.sequence_number,
            self.offset,
            self.enqueued_time,
            self.partition_key,
            self.properties,
            self.system_properties,
            self.property_types,
        )

    @property
    def identity(self) -> str:
        """Stable across replays: the dedupe key at an Event Hubs target and the row key of projections."""
        return f"{self.source}/{self.partition}/{self.sequence_number}"

    @property
    def message_id(self) -> str:
        """MessageId at a Service Bus target, stable across replays so duplicate detection drops them. A
        Service Bus source's own MessageId is kept: consumers of mirrored entities deduplicate by it across
        namespaces. Otherwise the source identity, hashed when longer than Service Bus allows."""
        system = self.system_properties
        if system.get(SOURCE_KIND) == SERVICE_BUS and system.get("message_id"):
            return system["message_id"]
        identity = self.identity
        if len(identity) <= _MAX_MESSAGE_ID:
            return identity
        return hashlib.sha256(identity.encode()).hexdigest()

    def json(self) -> Any:
        """The body as a JSON document, decoded once; raises :class:`NotJson`."""
        if self._document is _UNDECODED and self._not_json is None:
            try:
                self._document = json.loads(self.body)
            except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
                self._not_json = f"body is not JSON: {error}"
        if self._not_json is not None:
            raise NotJson(self._not_json)
        return self._document

    def edited(self, *, document: Any = _UNDECODED, **changes: Any) -> Event:
        """A copy with ``changes`` (``body``, ``properties``, ``system_properties``...); ``document``
        is the new body already decoded, which spares a later reader decoding it again."""
        if not changes.keys() <= _FIELDS:
            raise TypeError(f"Event has no field {sorted(changes.keys() - _FIELDS)}")
        copy = object.__new__(Event)  # a plain copy: half the cost of dataclasses.replace, per event
        copy.__dict__.update(self.__dict__)
        copy.__dict__.update(changes)
        if "body" in changes:
            copy._document, copy._not_json = document, None
        if "properties" in changes and "property_types" not in changes and self.property_types:
            copy.property_types = still_tagged(self.property_types, self.properties, changes["properties"])
        return copy

    def typed_properties(self) -> dict[str, Any]:
        """The property values with their source types, as sinks send them and conditions read them."""
        if not self.property_types:
            return self.properties
        return typed(self.properties, self.property_types)


_FIELDS = frozenset(f.name for f in fields(Event) if f.init)


@functools.lru_cache(maxsize=1024)
def iso(moment: datetime) -> str:
    # Cached: a partition's events come in runs that share an enqueued time (a producer's batch), and
    # formatting one took an eighth of a write task's own CPU (provenance stamps it on every event).
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
