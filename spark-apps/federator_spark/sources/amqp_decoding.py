"""Decoding a received transfer frame and its message, held to the SDK's own decoding.

The SDK decodes every AMQP value through a function that returns the rest of its buffer as a new
``memoryview`` slice: for a receiver of small events, with its frame handling, most of the receive
side's CPU (``sources/eventhubs_frames.py`` uses these instead). These functions read the same bytes by
index into one ``bytes`` object and return exactly what the SDK's ``decode_frame`` and
``decode_payload`` return (the same types: strings and symbols as ``bytes``, timestamps as integers,
the SDK's ``Message``, ``Properties`` and ``Header``). Constructors they do not read themselves
(described values, arrays, decimals, UUIDs, floats) go to the SDK's own decoder for that constructor,
so nothing is decoded differently.
"""

from __future__ import annotations

import struct
from typing import Any

from azure.eventhub._pyamqp._decode import _DECODE_BY_CONSTRUCTOR
from azure.eventhub._pyamqp.message import Header, Message, Properties

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_I8 = struct.Struct(">b")

_TRANSFER = 0x14
# Constructors (AMQP 1.0 types, part 1.6) read here.
_NULL, _TRUE, _FALSE, _UINT0, _ULONG0, _LIST0 = 0x40, 0x41, 0x42, 0x43, 0x44, 0x45
_SMALL_UNSIGNED = frozenset((0x50, 0x52, 0x53))  # ubyte, smalluint, smallulong
_SMALL_SIGNED = frozenset((0x51, 0x54, 0x55))  # byte, smallint, smalllong
_BOOLEAN, _USHORT, _UINT, _INT, _ULONG = 0x56, 0x60, 0x70, 0x71, 0x80
_SIGNED64 = frozenset((0x81, 0x83))  # long, timestamp (the SDK reads both as integers)
_VARIABLE8 = frozenset((0xA0, 0xA1, 0xA3))  # vbin8, str8, sym8: all bytes, as the SDK returns them
_VARIABLE32 = frozenset((0xB0, 0xB1, 0xB3))
_LIST8, _MAP8, _LIST32, _MAP32 = 0xC0, 0xC1, 0xD0, 0xD1
# Message sections by descriptor (part 3.2), as the SDK's ``Message`` fields hold them; others are skipped.
_REPEATED_SECTIONS = {0x75: "data", 0x76: "sequence"}
_SECTIONS: dict[int, tuple[str, Any]] = {
    0x70: ("header", Header),
    0x71: ("delivery_annotations", None),
    0x72: ("message_annotations", None),
    0x73: ("properties", Properties),
    0x74: ("application_properties", None),
    0x77: ("value", None),
    0x78: ("footer", None),
}


def value(data: bytes, i: int) -> tuple[Any, int]:
    """The AMQP value at ``data[i]`` and the index after it."""
    code = data[i]
    if code in _VARIABLE8:
        end = i + 2 + data[i + 1]
        return data[i + 2 : end], end
    if code == _NULL:
        return None, i + 1
    if code in _SMALL_UNSIGNED:
        return data[i + 1], i + 2
    if code in _SIGNED64:
        return _I64.unpack_from(data, i + 1)[0], i + 9
    if code == _MAP8:
        return _map(data, i + 3, data[i + 2] // 2)
    if code in _VARIABLE32:
        end = i + 5 + _U32.unpack_from(data, i + 1)[0]
        return data[i + 5 : end], end
    if code in _SMALL_SIGNED:
        return _I8.unpack_from(data, i + 1)[0], i + 2
    if code in (_TRUE, _FALSE):
        return code == _TRUE, i + 1
    if code in (_UINT0, _ULONG0):
        return 0, i + 1
    if code == _UINT:
        return _U32.unpack_from(data, i + 1)[0], i + 5
    if code == _INT:
        return _I32.unpack_from(data, i + 1)[0], i + 5
    if code == _ULONG:
        return _U64.unpack_from(data, i + 1)[0], i + 9
    if code == _BOOLEAN:
        return data[i + 1] == 1, i + 2
    if code == _LIST8:
        return _list(data, i + 3, data[i + 2])
    if code == _LIST0:
        return [], i + 1
    if code == _MAP32:
        return _map(data, i + 9, _U32.unpack_from(data, i + 5)[0] // 2)
    if code == _LIST32:
        return _list(data, i + 9, _U32.unpack_from(data, i + 5)[0])
    if code == _USHORT:
        return _U16.unpack_from(data, i + 1)[0], i + 3
    return _sdk_value(data, i)


def _sdk_value(data: bytes, i: int) -> tuple[Any, int]:
    """The SDK's own decoder for the constructor at ``data[i]`` (a TypeError for one it has none for,
    as the SDK's decoding raises)."""
    rest, decoded = _DECODE_BY_CONSTRUCTOR[data[i]](memoryview(data)[i + 1 :])
    return decoded, len(data) - len(rest)


def _list(data: bytes, i: int, count: int) -> tuple[list[Any], int]:
    items: list[Any] = [None] * count
    for n in range(count):
        items[n], i = value(data, i)
    return items, i


def _map(data: bytes, i: int, count: int) -> tuple[dict[Any, Any], int]:
    entries: dict[Any, Any] = {}
    for _ in range(count):
        key, i = value(data, i)
        entries[key], i = value(data, i)
    return entries, i


def transfer(body: bytes) -> tuple[list[Any], int] | None:
    """A transfer frame's fields (as the SDK's ``decode_frame`` lists them, without the payload) and
    the index where its payload starts; None for any other frame."""
    if body[2] != _TRANSFER:
        return None
    if body[3] == _LIST8:
        fields, end = _list(body, 6, body[5])
    else:
        fields, end = _list(body, 12, _U32.unpack_from(body, 8)[0])
    return fields, end


def message(data: bytes, i: int) -> Message:
    """The message whose sections start at ``data[i]``, as the SDK's ``decode_payload`` returns it."""
    sections: dict[str, Any] = {}
    size = len(data)
    while i < size:
        descriptor = data[i + 2]  # the SDK, too, takes the described type's first two bytes as given
        decoded, i = value(data, i + 3)
        repeated = _REPEATED_SECTIONS.get(descriptor)
        if repeated is not None:
            sections.setdefault(repeated, []).append(decoded)
        elif descriptor in _SECTIONS:
            name, shape = _SECTIONS[descriptor]
            sections[name] = decoded if shape is None else shape(*decoded)
    return Message(**sections)
