"""AMQP message encoding helpers that work on raw sections.

We keep messages as the encoded bytes the client sent and only touch the sections we
must change (annotations, header, properties), because decoding and re-encoding whole
messages costs more than everything else the broker does per event.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from proton import Array, Data, Described, symbol, ulong

HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA = 0x75
AMQP_SEQUENCE = 0x76
AMQP_VALUE = 0x77
FOOTER = 0x78
_BODY_CODES = frozenset({DATA, AMQP_SEQUENCE, AMQP_VALUE})

# Encoded sizes of fixed-width constructors (AMQP 1.0 §1.6), excluding the constructor byte.
_FIXED_WIDTH = {0x40: 0, 0x41: 0, 0x42: 0, 0x43: 0, 0x44: 0, 0x45: 0}
_FIXED_WIDTH.update({c: 1 for c in (0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56)})
_FIXED_WIDTH.update({c: 2 for c in (0x60, 0x61)})
_FIXED_WIDTH.update({c: 4 for c in (0x70, 0x71, 0x72, 0x73, 0x74)})
_FIXED_WIDTH.update({c: 8 for c in (0x80, 0x81, 0x82, 0x83, 0x84)})
_FIXED_WIDTH.update({0x94: 16, 0x98: 16})
_VARIABLE8 = frozenset({0xA0, 0xA1, 0xA3, 0xC0, 0xC1, 0xE0})
_VARIABLE32 = frozenset({0xB0, 0xB1, 0xB3, 0xD0, 0xD1, 0xF0})
_DATA_VBIN32 = b"\x00\x53\x75\xb0"  # a Data section holding a binary of 4-byte size
_UINT = struct.Struct(">I")


class CodecError(ValueError):
    """The bytes are not a well-formed sequence of AMQP message sections."""


def own(value: Any) -> Any:
    """Copy every binary value out of proton's reused decode buffer (it hands out memoryviews)."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {own(k): own(v) for k, v in value.items()}
    if isinstance(value, list):
        return [own(v) for v in value]
    if isinstance(value, Described):
        return Described(own(value.descriptor), own(value.value))
    if isinstance(value, Array):
        return Array(value.descriptor, value.type, *[own(e) for e in value.elements])
    return value


def _value_size(buf: bytes, pos: int) -> int:
    """Size of the encoded value at ``pos``, constructor included."""
    constructor = buf[pos]
    if constructor in _FIXED_WIDTH:
        return 1 + _FIXED_WIDTH[constructor]
    if constructor in _VARIABLE8:
        return 2 + buf[pos + 1]
    if constructor in _VARIABLE32:
        return 5 + int(struct.unpack_from(">I", buf, pos + 1)[0])
    data = Data()
    try:
        return data.decode(buf[pos:])
    except Exception as exc:
        raise CodecError(f"cannot size value with constructor 0x{constructor:02x}") from exc


def iter_sections(payload: bytes) -> Iterator[tuple[int, bytes]]:
    """Yield ``(descriptor code, raw section bytes)`` for each section of an encoded message."""
    pos = 0
    end = len(payload)
    while pos < end:
        code, after = _section(payload, pos)
        yield code, payload[pos:after]
        pos = after
    if pos != end:
        raise CodecError("trailing bytes after the last section")


def _section(payload: bytes, pos: int) -> tuple[int, int]:
    """The descriptor code of the section at ``pos``, and where the section ends."""
    if payload[pos] != 0x00:
        raise CodecError(f"section at byte {pos} is not a described type")
    if payload[pos + 1] == 0x53:
        code, value_at = payload[pos + 2], pos + 3
    elif payload[pos + 1] == 0x80:
        code, value_at = int(struct.unpack_from(">Q", payload, pos + 2)[0]), pos + 10
    else:
        raise CodecError(f"unsupported section descriptor at byte {pos}")
    return code, value_at + _value_size(payload, value_at)


def decode_section(raw: bytes) -> Any:
    """The value carried by one raw section (descriptor stripped), binaries copied."""
    data = Data()
    data.decode(raw)
    data.rewind()
    data.next()
    described = data.get_object()
    if not isinstance(described, Described):
        raise CodecError("section is not a described value")
    return own(described.value)


def encode_section(code: int, value: Any) -> bytes:
    data = Data()
    data.put_object(Described(ulong(code), value))
    return data.encode()


def data_section_content(raw: bytes) -> bytes:
    """The binary inside a Data section."""
    constructor = raw[3]
    if constructor == 0xA0:
        return raw[5:]
    if constructor == 0xB0:
        return raw[8:]
    raise CodecError("data section does not hold a binary")


def split_batch(payload: bytes) -> tuple[list[tuple[int, bytes]], list[bytes]] | None:
    """Split a batch envelope into (envelope sections, inner encoded messages), or None.

    Proton does not expose the transfer's message-format, so a batch (0x80013700) is
    recognised by shape: only Data sections in the body and each holds an encoded message.
    A plain message whose single Data body happens to be an encoded message is misread;
    that is an accepted risk, the SDKs never send one.
    """
    envelope: list[tuple[int, bytes]] = []
    inner: list[bytes] = []
    pos, end = 0, len(payload)
    while pos < end:
        if payload.startswith(_DATA_VBIN32, pos):  # an inner message (a thousand to a batch): inline
            start = pos + len(_DATA_VBIN32) + 4
            pos = start + _UINT.unpack_from(payload, start - 4)[0]
            content = payload[start:pos]
        else:
            code, after = _section(payload, pos)
            raw, pos = payload[pos:after], after
            if code in (AMQP_SEQUENCE, AMQP_VALUE):
                return None
            if code != DATA:
                envelope.append((code, raw))
                continue
            content = data_section_content(raw)
        if len(content) < 3 or content[0] != 0 or content[1] != 0x53 or not 0x70 <= content[2] <= 0x78:
            return None
        inner.append(content)
    if pos != end:
        raise CodecError("trailing bytes after the last section")
    return (envelope, inner) if inner else None


def rebuild(
    payload: bytes,
    *,
    header: list[Any] | None = None,
    delivery_annotations: dict[symbol, Any] | None = None,
    message_annotations: dict[symbol, Any] | None = None,
    replace: dict[int, Any] | None = None,
) -> bytes:
    """Re-assemble a message with some sections merged or replaced, the rest kept raw.

    ``header`` overrides non-None header fields; ``message_annotations`` are merged into
    the existing map; ``delivery_annotations`` replace any sent by the client; ``replace``
    maps a section code to a whole new value (e.g. application-properties).
    """
    sections = list(iter_sections(payload))
    singles = {code: raw for code, raw in sections if code not in _BODY_CODES}
    replace = dict(replace or {})
    if header is not None:
        fields = list(decode_section(singles[HEADER])) if HEADER in singles else []
        fields += [None] * (len(header) - len(fields))
        for i, value in enumerate(header):
            if value is not None:
                fields[i] = value
        replace[HEADER] = fields
    if message_annotations is not None:
        current = decode_section(singles[MESSAGE_ANNOTATIONS]) if MESSAGE_ANNOTATIONS in singles else {}
        current.update(message_annotations)
        replace[MESSAGE_ANNOTATIONS] = current
    if delivery_annotations is not None:
        replace[DELIVERY_ANNOTATIONS] = delivery_annotations
    for code, value in replace.items():
        singles[code] = encode_section(code, value)
    body = [raw for code, raw in sections if code in _BODY_CODES]
    before = [singles[code] for code in sorted(singles) if code < DATA]
    after = [singles[code] for code in sorted(singles) if code > AMQP_VALUE]
    return b"".join(before + body + after)


def insert_delivery_annotations(payload: bytes, encoded_section: bytes) -> bytes:
    """Put an already encoded delivery-annotations section after the header, if any.

    Cheap path for the per-delivery runtime metrics: only the header is sized.
    """
    if payload[:3] != b"\x00\x53\x70":
        return encoded_section + payload
    header_len = 3 + _value_size(payload, 3)
    return payload[:header_len] + encoded_section + payload[header_len:]
