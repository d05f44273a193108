"""AMQP 1.0 encoding of the events an Event Hubs target receives, once per event.

The SDK's way to a batch is ``EventData`` → ``AmqpAnnotatedMessage`` → its AMQP message, encoded in
full by ``EventDataBatch.add`` to check the size, then again to append it: two thirds of the CPU a
replicated event costs on the write side. An event leaves this app with a fixed shape (partition key
annotation, a few system properties, application properties, one data section), so it is encoded
here in one pass, with the SDK's own type choices (a property value keeps its AMQP type: an int
stays an int, a value beyond 32 bits a long), and appended to an ``EventDataBatch`` as the bytes the
SDK would have appended (:func:`append`). The SDK still owns the batch, the link, the send and its
retries. ``tests/sinks/test_amqp_encoding.py`` holds the encoding to the SDK's, section by section.
"""

from __future__ import annotations

import calendar
import struct
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

# Section descriptors: 0x00, smallulong, the section's code.
_ANNOTATIONS = b"\x00\x53\x72"
_PROPERTIES = b"\x00\x53\x73"
_APPLICATION_PROPERTIES = b"\x00\x53\x74"
_DATA = b"\x00\x53\x75"
_PARTITION_KEY = b"\xa3\x13x-opt-partition-key"  # sym8 key of the annotation
# The fields of the properties section this app sets, by position (AMQP 1.0 §3.2.4); message-id
# and correlation-id are strings, content-type a symbol.
PROPERTY_FIELDS = {"message_id": 0, "correlation_id": 5, "content_type": 6}
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
        out += b"\x83"
        out += _pack_long(int(calendar.timegm(value.utctimetuple()) * 1000 + value.microsecond / 1000))
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


def encode_event(
    body: bytes,
    properties: Mapping[str, Any],
    system: Mapping[str, str] | None = None,
    partition_key: str | None = None,
) -> bytes:
    """One event as an AMQP message: ``x-opt-partition-key`` annotation, the ``system`` properties
    (names of :data:`PROPERTY_FIELDS`), application ``properties``, ``body`` as its data section."""
    out = bytearray()
    if partition_key is not None:
        pair = bytearray(_PARTITION_KEY)
        _string(pair, partition_key)
        out += _ANNOTATIONS
        _compound(out, b"\xc1", b"\xd1", 2, pair)
    if system:
        fields = [_NULL] * (1 + max(PROPERTY_FIELDS[name] for name in system))
        for name, text in system.items():
            field = bytearray()
            if name == "content_type":
                _variable(field, b"\xa3", b"\xb3", text.encode("ascii"))
            else:
                _string(field, text)
            fields[PROPERTY_FIELDS[name]] = bytes(field)
        out += _PROPERTIES
        _compound(out, b"\xc0", b"\xd0", len(fields), bytearray(b"".join(fields)))
    if properties:
        pairs = bytearray()
        for name, value in properties.items():
            _name(pairs, name)
            _value(pairs, value)
        out += _APPLICATION_PROPERTIES
        _compound(out, b"\xc1", b"\xd1", 2 * len(properties), pairs)
    out += _DATA
    _variable(out, b"\xa0", b"\xb0", body)
    return bytes(out)


# What ``EventDataBatch.add`` counts for the framing of one message inside the batch message.
_SMALL_MESSAGE_OVERHEAD, _LARGE_MESSAGE_OVERHEAD = 5, 8


def append(batch: Any, encoded: bytes) -> bool:
    """Add an encoded event to an SDK ``EventDataBatch`` as its ``add`` would; False (and the batch
    unchanged) when it would exceed the batch's size limit."""
    size = batch._size + len(encoded)
    size += _SMALL_MESSAGE_OVERHEAD if len(encoded) < 256 else _LARGE_MESSAGE_OVERHEAD
    if size > batch.max_size_in_bytes:
        return False
    batch._message.data.append(encoded)
    batch._size = size
    batch._count += 1
    return True
