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

from proton import Event, Transport
from proton.handlers import IOHandler

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
_NULLS = [bytes([_NULL]) * n for n in range(max(_FIELD_COUNTS.values()) + 1)]
_SIZE = struct.Struct(">I")
_FLUSH_TIMEOUT_SECONDS = 1.0

_install_lock = threading.Lock()
_installed = False


def pad_frame(frame: bytes) -> bytes:
    """Return one complete frame with its performative list padded, payload untouched."""
    padded = bytearray()
    _append_padded(frame, 0, len(frame), padded)
    return bytes(padded)


def _append_padded(raw: bytes | bytearray, pos: int, size: int, padded: bytearray) -> None:
    """Append the frame at ``raw[pos : pos + size]`` to ``padded``, its performative list padded, without
    copying the frame first (a consumer sends one per event)."""
    at = pos + raw[pos + 4] * 4  # the performative: 0x00 0x53 code, then its list
    performative = raw[pos + 5] == _AMQP_FRAME and size > at - pos + 3 and raw[at : at + 2] == b"\x00\x53"
    want = _FIELD_COUNTS.get(raw[at + 2]) if performative else None
    if want is None:
        padded += raw[pos : pos + size]
        return
    list_at = at + 3
    constructor = raw[list_at]
    if constructor == 0x45:  # list0
        count, fields_at, end = 0, list_at + 1, list_at + 1
    elif constructor == 0xC0:  # list8
        count, fields_at, end = raw[list_at + 2], list_at + 3, list_at + 2 + raw[list_at + 1]
    elif constructor == 0xD0:  # list32
        list_size, count = struct.unpack_from(">II", raw, list_at + 1)
        fields_at, end = list_at + 9, list_at + 5 + list_size
    else:
        count = want
    if count >= want:
        padded += raw[pos : pos + size]
        return
    fields = end - fields_at + want - count
    header = (
        bytes([0xC0, fields + 1, want])
        if fields + 1 <= 0xFF
        else b"\xd0" + struct.pack(">II", fields + 4, want)
    )
    padded += _SIZE.pack(size - (end - list_at) + len(header) + fields)
    padded += raw[pos + 4 : list_at]
    padded += header
    padded += raw[fields_at:end]
    padded += _NULLS[want - count]
    padded += raw[end : pos + size]


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
            at = pos + raw[pos + 4] * 4  # a transfer is never renumbered: padded straight from raw
            if size > at - pos + 2 and raw[at + 2] == _TRANSFER:
                _append_padded(raw, pos, size, padded)
            else:
                frame = bytes(raw[pos : pos + size])
                for piece in self.ids.outgoing(frame) if self.ids.concerns(frame) else (frame,):
                    _append_padded(piece, 0, len(piece), padded)
            pos += size
        del raw[:pos]


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

        original_closed = IOHandler.on_transport_closed

        def on_transport_closed(self: IOHandler, event: Event) -> None:
            _flush(event.transport)
            original_closed(self, event)

        # Class-level patch: proton's I/O looks the methods up on the class.
        Transport.push = push  # type: ignore[method-assign,assignment]
        Transport.pending = pending  # type: ignore[method-assign]
        Transport.peek = peek  # type: ignore[method-assign]
        Transport.pop = pop  # type: ignore[method-assign]
        IOHandler.on_transport_closed = on_transport_closed  # type: ignore[method-assign]
        _installed = True


def _flush(transport: Any) -> None:
    """Write the padded bytes still buffered when proton closes a transport.

    Proton counts its output written once ``pending`` has taken it into our buffer, so after the last
    frame (the ``close`` that answers a client's, AMQP 1.0 §2.4.3) it reports the transport closed and
    the reactor would drop the socket with that frame unsent: a client waiting for it hangs.
    """
    out: _PaddedOutput | None = getattr(transport, "_federator_pad", None)
    selectable = getattr(transport, "_selectable", None)
    if out is None or not out.padded or selectable is None or selectable.is_terminal:
        return
    sock = selectable._delegate
    try:
        sock.settimeout(_FLUSH_TIMEOUT_SECONDS)  # a few bytes: bounded, not left to the reactor
        sock.sendall(bytes(out.padded))
    except OSError:
        pass  # the peer went first: nothing to answer
    out.padded.clear()
