"""Service Bus messages on the wire: reading what the broker needs, encoding deliveries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from proton import symbol, timestamp, uint

from federator_contract.sql import SqlMessage
from federator_emulator.amqp import codec
from federator_emulator.amqp.sqlvalues import to_amqp, to_sql
from federator_emulator.state.servicebus import SbMessage

# Positions in the AMQP header and properties lists (AMQP 1.0 §3.2.1, §3.2.4).
_HEADER_TTL = 2
_HEADER_DELIVERY_COUNT = 4
_PROPERTY_FIELDS = {
    "MessageId": 0,
    "To": 2,
    "Label": 3,
    "ReplyTo": 4,
    "CorrelationId": 5,
    "ContentType": 6,
    "SessionId": 10,
    "ReplyToSessionId": 12,
}
_SYMBOL_FIELDS = frozenset({"ContentType"})
SCHEDULED_ENQUEUE_TIME = symbol("x-opt-scheduled-enqueue-time")


class _Sections:
    """A message's sections before its body, each decoded when first asked for: storing a message reads
    its header, properties and annotations, and only a filter or an action its application properties
    (decoding them all was over a third of the emulator's time per message sent to a topic)."""

    def __init__(self, payload: bytes, decoded: dict[int, Any] | None = None) -> None:
        self._raw = {code: raw for code, raw in codec.iter_sections(payload) if code < codec.DATA}
        self._decoded = dict(decoded or {})

    def get(self, code: int) -> Any:
        if code not in self._decoded:
            raw = self._raw.get(code)
            self._decoded[code] = None if raw is None else codec.decode_section(raw)
        return self._decoded[code]


def _to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


class AmqpInbound:
    """A message received from a client (implements ``state.servicebus.Inbound``)."""

    def __init__(self, payload: bytes, decoded: dict[int, Any] | None = None) -> None:
        """``decoded``: sections of ``payload`` the caller already has decoded, by code."""
        self.payload = payload
        self._sections = _Sections(payload, decoded)
        header = self._sections.get(codec.HEADER) or []
        properties = self._sections.get(codec.PROPERTIES) or []
        annotations = self._sections.get(codec.MESSAGE_ANNOTATIONS) or {}
        ttl_ms = header[_HEADER_TTL] if len(header) > _HEADER_TTL else None
        self.ttl_seconds: float | None = ttl_ms / 1000 if ttl_ms else None
        message_id = properties[0] if properties else None
        if message_id is None:
            properties = self._assign_message_id(properties)
            message_id = properties[0]
        self.message_id: str | None = str(message_id)
        group_id = properties[_PROPERTY_FIELDS["SessionId"]] if len(properties) > 10 else None
        self.session_id: str | None = None if group_id is None else str(group_id)
        scheduled = annotations.get(SCHEDULED_ENQUEUE_TIME)
        self.scheduled_at: float | None = scheduled / 1000 if scheduled else None
        # The properties as the SQL language sees them, made on first use (only topics need them).
        self._sql: tuple[dict[str, Any], dict[str, Any]] | None = None

    def _assign_message_id(self, properties: list[Any]) -> list[Any]:
        """Service Bus gives a message sent without an id one of its own, a GUID without dashes
        (the JS SDK's lock renewal keys its timers by it)."""
        properties = list(properties) + [None] * (1 - len(properties))
        properties[0] = uuid.uuid4().hex
        self.payload = codec.rebuild(self.payload, replace={codec.PROPERTIES: properties})
        self._sections = _Sections(self.payload, {codec.PROPERTIES: properties})
        return properties

    def _sql_properties(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self._sql is None:
            properties = list(self._sections.get(codec.PROPERTIES) or [])
            system: dict[str, Any] = {}
            for name, index in _PROPERTY_FIELDS.items():
                if index < len(properties) and properties[index] is not None:
                    value = properties[index]
                    system[name] = value.decode() if isinstance(value, bytes) else str(value)
            if self.ttl_seconds:
                system["TimeToLive"] = timedelta(seconds=self.ttl_seconds)
            if self.scheduled_at:
                system["ScheduledEnqueueTimeUtc"] = _to_datetime(int(self.scheduled_at * 1000))
            user = {str(k): to_sql(v) for k, v in self._application_properties().items()}
            self._sql = system, user
        return self._sql

    def _application_properties(self) -> dict[Any, Any]:
        return dict(self._sections.get(codec.APPLICATION_PROPERTIES) or {})

    def sql_view(self) -> SqlMessage:
        """A fresh ``SqlMessage``: an action may change it without touching other views."""
        system, user = self._sql_properties()
        return SqlMessage(system=dict(system), user=dict(user))

    def rewritten(self, view: SqlMessage) -> AmqpInbound:
        properties = list(self._sections.get(codec.PROPERTIES) or [])
        properties += [None] * (13 - len(properties))
        for name, index in _PROPERTY_FIELDS.items():
            value = view.system.get(name)
            if value is not None and str(value) != str(properties[index]):
                properties[index] = symbol(value) if name in _SYMBOL_FIELDS else str(value)
            elif value is None:
                properties[index] = None
        header = list(self._sections.get(codec.HEADER) or [])
        header += [None] * (5 - len(header))
        ttl = view.system.get("TimeToLive")
        header[_HEADER_TTL] = uint(int(ttl.total_seconds() * 1000)) if ttl else None
        replace: dict[int, Any] = {
            codec.PROPERTIES: properties,
            codec.HEADER: header,
            codec.APPLICATION_PROPERTIES: self._application_properties_of(view.user),
        }
        # The rewritten sections are known: decoding them again would cost more than the rest of fan-out.
        return AmqpInbound(codec.rebuild(self.payload, replace=replace), replace)

    def _application_properties_of(self, user: dict[str, Any]) -> dict[Any, Any]:
        """``user`` on the wire: a value the action left alone keeps its AMQP type and bytes (a ushort
        stays a ushort), a value it set is encoded as Service Bus encodes its .NET type."""
        _, original = self._sql_properties()
        raw = {str(k): (k, v) for k, v in self._application_properties().items()}
        out: dict[Any, Any] = {}
        for key, value in user.items():
            if key in raw and original.get(key) is value:
                wire_key, wire_value = raw[key]
                out[wire_key] = wire_value
            else:
                out[key] = to_amqp(value)
        return out


def with_application_properties(payload: bytes, changes: dict[str, Any]) -> bytes:
    """The message with ``changes`` set among its application properties (the others kept)."""
    properties = dict(_Sections(payload).get(codec.APPLICATION_PROPERTIES) or {})
    properties.update(changes)
    return codec.rebuild(payload, replace={codec.APPLICATION_PROPERTIES: properties})


def delivery_payload(message: SbMessage) -> bytes:
    """The message as delivered: broker annotations, delivery count and dead-letter details."""
    annotations: dict[symbol, Any] = {
        symbol("x-opt-sequence-number"): message.sequence_number,
        symbol("x-opt-enqueued-time"): timestamp(int(message.enqueued_time * 1000)),
        symbol("x-opt-message-state"): int(message.state),
    }
    if message.lock_token is not None:
        annotations[symbol("x-opt-locked-until")] = timestamp(int(message.locked_until * 1000))
    if message.dead_letter_source is not None:
        annotations[symbol("x-opt-deadletter-source")] = message.dead_letter_source
    replace: dict[int, Any] = {}
    if message.dead_letter_reason is not None or message.dead_letter_description is not None:
        props = dict(_Sections(message.payload).get(codec.APPLICATION_PROPERTIES) or {})
        props["DeadLetterReason"] = message.dead_letter_reason or ""
        props["DeadLetterErrorDescription"] = message.dead_letter_description or ""
        replace[codec.APPLICATION_PROPERTIES] = props
    header: list[Any] = [None] * 5
    header[_HEADER_DELIVERY_COUNT] = uint(message.delivery_count)
    return codec.rebuild(message.payload, header=header, message_annotations=annotations, replace=replace)
