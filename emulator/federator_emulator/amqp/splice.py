"""Splice broker annotations into stored event bytes without decoding them.

Event Hubs delivers every event with a few annotations the broker owns (sequence number,
offset, enqueued time) and, for runtime metrics, delivery annotations. Decoding and
re-encoding a message per delivery would dominate receive cost, so the entries are
encoded directly and appended to the raw message-annotations map.
"""

from __future__ import annotations

import struct

from federator_emulator.amqp import codec

_LONG = struct.Struct(">q")


def _symbol(name: str) -> bytes:
    raw = name.encode()
    return b"\xa3" + bytes([len(raw)]) + raw


def encode_long(value: int) -> bytes:
    return b"\x81" + _LONG.pack(value)


def encode_timestamp(ms: int) -> bytes:
    return b"\x83" + _LONG.pack(ms)


def encode_string(value: str) -> bytes:
    raw = value.encode()
    if len(raw) <= 0xFF:
        return b"\xa1" + bytes([len(raw)]) + raw
    return b"\xb1" + struct.pack(">I", len(raw)) + raw


SEQUENCE_NUMBER = _symbol("x-opt-sequence-number")
OFFSET = _symbol("x-opt-offset")
ENQUEUED_TIME = _symbol("x-opt-enqueued-time")
LAST_SEQUENCE_NUMBER = _symbol("last_enqueued_sequence_number")
LAST_OFFSET = _symbol("last_enqueued_offset")
LAST_TIME = _symbol("last_enqueued_time_utc")
RETRIEVAL_TIME = _symbol("runtime_info_retrieval_time_utc")


def _map(entries: bytes, count: int) -> bytes:
    if len(entries) + 1 <= 0xFF and count <= 0xFF:
        return b"\xc1" + bytes([len(entries) + 1, count]) + entries
    return b"\xd1" + struct.pack(">II", len(entries) + 4, count) + entries


def _map_entries(raw_map: bytes) -> tuple[bytes, int]:
    """Entries and element count of an encoded map (the value after a section descriptor)."""
    if raw_map[0] == 0xC1:
        return raw_map[3:], raw_map[2]
    if raw_map[0] == 0xD1:
        _size, count = struct.unpack_from(">II", raw_map, 1)
        return raw_map[9:], count
    raise codec.CodecError("message annotations are not a map")


def delivery_annotations_section(entries: bytes, count: int) -> bytes:
    return b"\x00\x53\x71" + _map(entries, count)


def delivered_event(
    sequence_number: int, offset: int, enqueued_time_ms: int, payload: bytes, delivery_section: bytes
) -> bytes:
    """A stored event as a consumer receives it: the broker's annotations spliced in, and
    ``delivery_section`` (encoded delivery annotations, or b"") after the header."""
    entries = (
        SEQUENCE_NUMBER
        + encode_long(sequence_number)
        + OFFSET
        + encode_string(str(offset))
        + ENQUEUED_TIME
        + encode_timestamp(enqueued_time_ms)
    )
    if payload[:2] == b"\x00\x53" and payload[2] > codec.MESSAGE_ANNOTATIONS:
        # The usual event: no header, no annotations of its own; nothing to walk, one concatenation.
        return delivery_section + b"\x00\x53\x72" + _map(entries, 6) + payload
    annotated = add_message_annotations(payload, entries, 6)
    return codec.insert_delivery_annotations(annotated, delivery_section) if delivery_section else annotated


def add_message_annotations(payload: bytes, entries: bytes, count: int) -> bytes:
    """Append encoded map entries (``count`` keys + values) to the message annotations.

    Sections ahead of message annotations (header, delivery annotations) stay in front;
    a new annotations section is created when the message had none.
    """
    head: list[bytes] = []
    pos = 0
    for code, raw in codec.iter_sections(payload):
        if code < codec.MESSAGE_ANNOTATIONS:
            head.append(raw)
            pos += len(raw)
            continue
        if code == codec.MESSAGE_ANNOTATIONS:
            existing, existing_count = _map_entries(raw[3:])
            section = b"\x00\x53\x72" + _map(existing + entries, existing_count + count)
            return b"".join(head) + section + payload[pos + len(raw) :]
        break
    return b"".join(head) + b"\x00\x53\x72" + _map(entries, count) + payload[pos:]
