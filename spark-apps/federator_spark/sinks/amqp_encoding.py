"""AMQP 1.0 encoding of the messages this app sends to Event Hubs and Service Bus, once per message.

The SDKs' way to a batch is ``EventData`` or ``ServiceBusMessage`` → ``AmqpAnnotatedMessage`` → a pyamqp
message, encoded in full by ``EventDataBatch.add`` (``ServiceBusMessageBatch.add_message``) to check the
size, then again to append it: two thirds of the CPU a replicated message costs on the write side. A
message leaves this app with a fixed shape (a header when it has a time to live, the partition key
annotation, a few properties, application properties, one data section), so it is encoded here in one
pass, to the bytes the SDK would have produced: its type choices (a property value keeps its AMQP type:
an int stays an int, a value beyond 32 bits a long), all thirteen fields of the properties section
written, a TTL's creation and expiry times stamped by the SDK's clock. :func:`append` adds the bytes to
either SDK batch as its ``add`` would. The SDK still owns the batch, the link, the send and its retries.
Left out is what ``add`` writes only with azure-core tracing enabled (a Diagnostic-Id property per
message), which this app does not enable. ``tests/sinks/test_amqp_encoding.py`` holds the encoding to
the SDKs' bytes.
"""

from __future__ import annotations

import calendar
import struct
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

# Section descriptors: 0x00, smallulong, the section's code.
_HEADER = b"\x00\x53\x70"
_ANNOTATIONS = b"\x00\x53\x72"
_PROPERTIES = b"\x00\x53\x73"
_APPLICATION_PROPERTIES = b"\x00\x53\x74"
_DATA = b"\x00\x53\x75"
_PARTITION_KEY = b"\xa3\x13x-opt-partition-key"  # sym8 key of the annotation
# The fields of the properties section this app sets, by position (AMQP 1.0 §3.2.4): strings, but
# content-type, a symbol. group-id is Service Bus's SessionId.
PROPERTY_FIELDS = {
    "message_id": 0,
    "to": 2,
    "subject": 3,
    "reply_to": 4,
    "correlation_id": 5,
    "content_type": 6,
    "group_id": 10,
}
_PROPERTY_COUNT = 13  # the SDKs write every field, null or not
_ABSOLUTE_EXPIRY_TIME, _CREATION_TIME = 8, 9
_MAX_ABSOLUTE_EXPIRY_TIME = 253_402_243_199_000  # the SDKs' cap (9999-12-31 07:59:59 UTC), in ms
_MAX_TTL = 2**32 - 1  # the header's ttl is an AMQP uint of milliseconds
_NULL = b"\x40"
_INT32 = range(-(2**31), 2**31)
_pack_int = struct.Struct(">i").pack
_pack_long = struct.Struct(">q").pack
_pack_double = struct.Struct(">d").pack
_pack_uint = struct.Struct(">I").pack


def _variable(out: bytearray, small: bytes, large: bytes, data: bytes) -> None:
    size = len(data)
    if size < 256:
        out += small
        out.append(size)
    else:
        out += large
        out += _pack_uint(size)
    out += data


def _string(out: bytearray, text: str) -> None:
    _variable(out, b"\xa1", b"\xb1", text.encode())


# Encoded property names: a task sends the same few names with every event (bounded: names can be data).
_NAMES: dict[str, bytes] = {}
_NAMES_KEPT = 1024


def _name(out: bytearray, name: str) -> None:
    encoded = _NAMES.get(name)
    if encoded is None:
        field = bytearray()
        _string(field, name)
        encoded = bytes(field)
        if len(_NAMES) < _NAMES_KEPT:
            _NAMES[name] = encoded
    out += encoded


def _value(out: bytearray, value: Any) -> None:
    """A property value, typed as the SDK's ``encode_unknown`` types it (ints beyond 32 bits: long)."""
    kind = type(value)
    if kind is str:
        data = value.encode()
        if len(data) < 256:  # _string, inline: most values are short strings
            out.append(0xA1)
            out.append(len(data))
            out += data
        else:
            _variable(out, b"\xa1", b"\xb1", data)
    elif kind is int:
        if -128 <= value <= 127:
            out += b"\x54"
            out += value.to_bytes(1, "big", signed=True)
        elif value in _INT32:
            out += b"\x71"
            out += _pack_int(value)
        else:
            out += b"\x81"
            out += _pack_long(value)
    elif kind is bool:
        out += b"\x56\x01" if value else b"\x56\x00"
    elif kind is float:
        out += b"\x82"
        out += _pack_double(value)
    elif isinstance(value, datetime):
        out += _timestamp(int(calendar.timegm(value.utctimetuple()) * 1000 + value.microsecond / 1000))
    elif isinstance(value, uuid.UUID):
        out += b"\x98"
        out += value.bytes
    elif isinstance(value, bytes | bytearray):
        _variable(out, b"\xa0", b"\xb0", bytes(value))
    elif value is None:
        out += _NULL
    else:
        raise TypeError(f"cannot encode a property value of type {kind.__name__}")


def _compound(out: bytearray, small: bytes, large: bytes, count: int, items: bytearray) -> None:
    """A map or list: ``count`` encoded elements in ``items``."""
    if count <= 255 and len(items) < 255:
        out += small
        out.append(len(items) + 1)
        out.append(count)
    else:
        out += large
        out += _pack_uint(len(items) + 4)
        out += _pack_uint(count)
    out += items


def header_ttl(seconds: float) -> int:
    """A time to live as the SDKs write it in the header: whole seconds, in milliseconds; past the
    uint's range (where the SDKs fail) the longest a header can hold."""
    return min(int(timedelta(seconds=seconds).total_seconds()) * 1000, _MAX_TTL)


def _creation_time() -> int:
    """Now, as the SDKs stamp a message with a TTL: whole seconds of a UTC wall-clock reading that
    ``mktime`` takes as local time (right when the host runs in UTC, as pods do), in ms."""
    return int(time.mktime(datetime.now(UTC).timetuple())) * 1000


def _header(out: bytearray, ttl: int) -> None:
    """The header the SDKs write for a TTL (0, or whole seconds: never a smalluint): durable, priority,
    ttl, first-acquirer, delivery-count."""
    field = b"\x43" if ttl == 0 else b"\x70" + _pack_uint(ttl)  # uint0 or uint
    out += _HEADER
    _compound(out, b"\xc0", b"\xd0", 5, bytearray(b"\x40\x40" + field + b"\x40\x40"))


def _timestamp(milliseconds: int) -> bytes:
    return b"\x83" + _pack_long(milliseconds)


def _properties(out: bytearray, system: Mapping[str, str], ttl: int | None) -> None:
    fields = [_NULL] * _PROPERTY_COUNT
    for name, text in system.items():
        field = bytearray()
        if name == "content_type":
            _variable(field, b"\xa3", b"\xb3", text.encode())
        else:
            _string(field, text)
        fields[PROPERTY_FIELDS[name]] = bytes(field)
    if ttl:
        created = _creation_time()
        fields[_ABSOLUTE_EXPIRY_TIME] = _timestamp(min(_MAX_ABSOLUTE_EXPIRY_TIME, created + ttl))
        fields[_CREATION_TIME] = _timestamp(created)
    out += _PROPERTIES
    _compound(out, b"\xc0", b"\xd0", _PROPERTY_COUNT, bytearray(b"".join(fields)))


def _annotations(out: bytearray, partition_key: str) -> None:
    pair = bytearray(_PARTITION_KEY)
    _string(pair, partition_key)
    out += _ANNOTATIONS
    _compound(out, b"\xc1", b"\xd1", 2, pair)


def _application_properties(out: bytearray, properties: Mapping[str, Any]) -> None:
    pairs = bytearray()
    for name, value in properties.items():
        _name(pairs, name)
        _value(pairs, value)
    out += _APPLICATION_PROPERTIES
    _compound(out, b"\xc1", b"\xd1", 2 * len(properties), pairs)


def encode_message(
    body: bytes,
    properties: Mapping[str, Any],
    system: Mapping[str, str] | None = None,
    partition_key: str | None = None,
    ttl: int | None = None,
) -> bytes:
    """One message: a header with ``ttl`` (ms, from :func:`header_ttl`), the ``x-opt-partition-key``
    annotation, the ``system`` properties (names of :data:`PROPERTY_FIELDS`; with a TTL, also its creation
    and expiry times), application ``properties``, ``body`` as its data section."""
    out = bytearray()
    if ttl is not None:
        _header(out, ttl)
    if partition_key is not None:
        _annotations(out, partition_key)
    if system or ttl:
        _properties(out, system or {}, ttl)
    if properties:
        _application_properties(out, properties)
    out += _DATA
    _variable(out, b"\xa0", b"\xb0", body)
    return bytes(out)


# What the SDKs' batches count for the framing of one message inside the batch message.
_SMALL_MESSAGE_OVERHEAD, _LARGE_MESSAGE_OVERHEAD = 5, 8


def append(batch: Any, encoded: bytes) -> bool:
    """Add an encoded message to an ``EventDataBatch`` or a ``ServiceBusMessageBatch`` as their ``add``
    would (both keep their messages as the data sections of a batch message, field 5, and count ``_size``
    and ``_count``); False (and the batch unchanged) when it would exceed the batch's size limit."""
    size = batch._size + len(encoded)
    size += _SMALL_MESSAGE_OVERHEAD if len(encoded) < 256 else _LARGE_MESSAGE_OVERHEAD
    if size > batch.max_size_in_bytes:
        return False
    batch._message[5].append(encoded)
    batch._size = size
    batch._count += 1
    return True
