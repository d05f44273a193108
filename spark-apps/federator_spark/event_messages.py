"""An event as conditions and editors read it: the SQL engine's message view of an :class:`Event`.

Apart from ``events``: the process Spark starts for each query's source imports ``events`` but only plans
batches, and the SQL engine (``federator_contract.sql``) was 13 % of that process's imports: 20-40 ms on a
quiet machine, 0.4 s beside a CPU hog, before a moved query could start (docs/patterns/failover.md, "Where
a move's seconds go under load")."""

from __future__ import annotations

from typing import Any

from federator_contract.sql import SqlMessage
from federator_spark.events import Event, NotJson

# Event Hubs / AMQP property names → the Service Bus system property names conditions use.
_SYSTEM_NAMES = {
    "message_id": "MessageId",
    "content_type": "ContentType",
    "correlation_id": "CorrelationId",
    "subject": "Label",
    "to": "To",
    "reply_to": "ReplyTo",
}


class EventMessage(SqlMessage):
    """An event as conditions and editors read it. Built per event but filled on first read, so a
    body nobody inspects is never decoded: ``user`` is the event's own property map (read-only here),
    ``system`` the Service Bus names of its system properties, ``body`` the JSON document or None."""

    def __init__(self, event: Event) -> None:  # no dataclass __init__: the fields are computed
        self.event = event
        self._system: dict[str, Any] | None = None
        self._user: dict[str, Any] | None = None

    @property
    def user(self) -> dict[str, Any]:  # type: ignore[override]
        if self._user is None:
            self._user = self.event.typed_properties()
        return self._user

    @property
    def system(self) -> dict[str, Any]:  # type: ignore[override]
        if self._system is None:
            event = self.event
            system: dict[str, Any] = {
                name: event.system_properties[key]
                for key, name in _SYSTEM_NAMES.items()
                if key in event.system_properties
            }
            system["SequenceNumber"] = event.sequence_number
            system["EnqueuedTimeUtc"] = event.enqueued_time
            if event.partition_key is not None:
                system["PartitionKey"] = event.partition_key
            self._system = system
        return self._system

    @property
    def body(self) -> Any:
        try:
            return self.event.json()
        except NotJson:
            return None
