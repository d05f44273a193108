"""Pad outgoing AMQP performatives to their full field count.

The Azure SDKs' pure-Python AMQP stack (``_pyamqp``) reads performative fields by
position and never checks the list length, while proton omits trailing null fields as
the AMQP spec allows. The first ``open`` frame then fails with ``IndexError`` in the
client. Proton-C offers no way to force the nulls (session properties cannot even be
set), so we rewrite the frames on their way out: proton's reactor I/O is Python code that
only touches the transport through ``pending``/``peek``/``pop``, and we wrap those.

Explicit trailing nulls are valid AMQP, so padding every proton transport in the
process is harmless for other peers; that is why the patch is installed class-wide.

The same patch passes incoming bytes (``push``) and our dispositions through
``sequencing.DeliveryIds``, which tolerates the SDKs' out-of-sequence delivery-ids.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from proton import Transport

from federator_emulator.amqp.sequencing import DeliveryIds

# Field count per performative descriptor code (AMQP 1.0 §2.7).
_FIELD_COUNTS = {
    0x10: 10,  # open
    0x11: 8,  # begin
    0x12: 14,  # attach
    0x13: 11,  # flow
    0x14: 11,  # transfer
    0x15: 6,  # disposition
    0x16: 3,  # detach
    0x17: 1,  # end
    0x18: 1,  # close
}
_PROTOCOL_HEADER_LEN = 8
_FRAME_HEADER_LEN = 8
_AMQP_FRAME = 0
_NULL = 0x40
_TRANSFER = 0x14
_TRANSFER_FIELDS = _FIELD_COUNTS[_TRANSFER]
_NULLS = [bytes([_NULL]) * n for n in range(_TRANSFER_FIELDS + 1)]
_SIZE = struct.Struct(">I")

_install_lock = threading.Lock()
_installed = False


def pad_frame(frame: bytes) -> bytes:
    """Return one complete frame with its performative list padded, payload untouched."""
    doff = frame[4] * 4
    if frame[5] != _AMQP_FRAME or len(frame) <= doff + 3 or frame[doff : doff + 2] != b"\x00\x53":
        return frame
    want = _FIELD_COUNTS.get(frame[doff + 2])
    if want is None:
        return frame
    list_at = doff + 3
    constructor = frame[list_at]
    if constructor == 0x45:  # list0
        fields, count, end = b"", 0, list_at + 1
    elif constructor == 0xC0:  # list8
        size, count = frame[list_at + 1], frame[list_at + 2]
        fields, end = frame[list_at + 3 : list_at + 2 + size], list_at + 2 + size
    elif constructor == 0xD0:  # list32
        size, count = struct.unpack_from(">II", frame, list_at + 1)
        fields, end = frame[list_at + 9 : list_at + 5 + size], list_at + 5 + size
    else:
        return frame
    if count >= want:
        return frame
    fields += bytes([_NULL]) * (want - count)
    if len(fields) + 1 <= 0xFF:
        encoded = bytes([0xC0, len(fields) + 1, want]) + fields
    else:
        encoded = b"\xd0" + struct.pack(">II", len(fields) + 4, want) + fields
    body = frame[_FRAME_HEADER_LEN:list_at] + encoded + frame[end:]
    return struct.pack(">I", _FRAME_HEADER_LEN + len(body)) + frame[4:_FRAME_HEADER_LEN] + body


class _PaddedOutput:
    """Per-transport buffers: raw bytes not yet split into frames, and padded bytes."""

    __slots__ = ("ids", "padded", "raw")

    def __init__(self, ids: DeliveryIds) -> None:
        self.raw = bytearray()
        self.padded = bytearray()
        self.ids = ids

    def feed(self, data: bytes) -> None:
        self.raw += data
        raw, padded = self.raw, self.padded
        pos, end = 0, len(raw)
        while end - pos >= 4:
            if raw[pos : pos + 4] == b"AMQP":
                if end - pos < _PROTOCOL_HEADER_LEN:
                    break
                padded += raw[pos : pos + _PROTOCOL_HEADER_LEN]
                pos += _PROTOCOL_HEADER_LEN
                continue
            size = _SIZE.unpack_from(raw, pos)[0]
            if end - pos < size:
                break
            if not _pad_transfer(raw, pos, size, padded):
                frame = bytes(raw[pos : pos + size])
                for piece in self.ids.outgoing(frame) if self.ids.concerns(frame) else (frame,):
                    padded += pad_frame(piece)
            pos += size
        del raw[:pos]


def _pad_transfer(raw: bytearray, pos: int, size: int, padded: bytearray) -> bool:
    """Append the transfer frame at ``pos`` to ``padded``, padded, without copying it first: what
    :func:`pad_frame` does, inline for the frame a consumer sends per event. False (nothing appended)
    for any other frame, or a transfer whose fields do not fit the short list form."""
    at = pos + raw[pos + 4] * 4  # the performative: 0x00 0x53 code, then its list
    if (
        raw[pos + 5] != _AMQP_FRAME
        or size < at - pos + 6
        or raw[at + 2] != _TRANSFER
        or raw[at : at + 2] != b"\x00\x53"
        or raw[at + 3] != 0xC0
    ):
        return False
    list_size, count = raw[at + 4], raw[at + 5]
    missing = _TRANSFER_FIELDS - count
    if missing <= 0:
        padded += raw[pos : pos + size]
        return True
    if list_size + missing > 0xFF:
        return False
    padded += _SIZE.pack(size + missing)
    padded += raw[pos + 4 : at + 4]
    padded.append(list_size + missing)
    padded.append(_TRANSFER_FIELDS)
    padded += raw[at + 6 : at + 5 + list_size]
    padded += _NULLS[missing]
    padded += raw[at + 5 + list_size : pos + size]
    return True


def _ids(transport: Any) -> DeliveryIds:
    try:
        ids: DeliveryIds = transport._federator_ids
    except AttributeError:
        ids = DeliveryIds()
        transport._federator_ids = ids
    return ids


def _buffer(transport: Any) -> _PaddedOutput:
    try:
        out: _PaddedOutput = transport._federator_pad
    except AttributeError:
        out = _PaddedOutput(_ids(transport))
        transport._federator_pad = out
    return out


def install() -> None:
    """Wrap ``Transport.pending/peek/pop`` once per process (idempotent, thread-safe)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        original_pending, original_peek, original_pop = Transport.pending, Transport.peek, Transport.pop
        original_push = Transport.push

        def pending(self: Transport) -> int:
            out = _buffer(self)
            raw_pending = original_pending(self)
            # Proton hands its output out in pieces of its buffer's size (16 KB at first): a frame larger
            # than that is pulled whole now, or the reactor, told nothing is pending, would never ask again.
            while raw_pending > 0:
                data = original_peek(self, raw_pending)
                original_pop(self, raw_pending)
                if data:
                    out.feed(data)
                if not out.raw:
                    break
                raw_pending = original_pending(self)
            if raw_pending < 0 and not out.padded:
                return raw_pending  # end of stream: let the reactor see it
            return len(out.padded)

        def peek(self: Transport, size: int) -> bytes | None:
            out = _buffer(self)
            if not out.padded:
                return original_peek(self, size)
            return bytes(out.padded[:size])

        def pop(self: Transport, size: int) -> None:
            out = _buffer(self)
            if out.padded:
                del out.padded[:size]
            else:
                original_pop(self, size)

        def push(self: Transport, data: bytes) -> None:
            whole = _ids(self).incoming(data)
            # A renumbered id may take a few more bytes than the client's: push what proton takes, in
            # turns (it processes whole frames at once, which frees its buffer for the rest).
            while whole:
                capacity = self.capacity()
                if capacity <= 0:
                    return  # closed for input: proton drops what arrives after its end of stream
                original_push(self, whole[:capacity])
                whole = whole[capacity:]

        # Class-level patch: proton's I/O looks the methods up on the class.
        Transport.push = push  # type: ignore[method-assign,assignment]
        Transport.pending = pending  # type: ignore[method-assign]
        Transport.peek = peek  # type: ignore[method-assign]
        Transport.pop = pop  # type: ignore[method-assign]
        _installed = True
