"""Tolerate the SDKs' out-of-sequence transfer delivery-ids, as Azure does.

The SDKs' ``_pyamqp`` session numbers transfers from threads without a lock: the
``AutoLockRenewer`` renewing several messages at once sends management requests that carry
the same delivery-id twice (or skip one). Azure accepts them; proton closes the connection
with ``amqp:session:invalid-field`` ("sequencing error"), and every lock is lost.

So the incoming byte stream is read frame by frame before proton sees it. A transfer that
starts a delivery with an id other than the one proton expects next on its session gets the
expected id instead, and for an unsettled one the client's own id is remembered: our
dispositions for it are written back with the client's id on the way out, so the client
settles what it sent. Frames of well-behaved clients pass through untouched.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

_PROTOCOL_HEADER_LEN = 8
_FRAME_HEADER_LEN = 8
_AMQP_FRAME = 0
_BEGIN, _TRANSFER, _DISPOSITION, _END = 0x11, 0x14, 0x15, 0x17
_NULL = 0x40
_SESSION_CODES = frozenset((_BEGIN, _END, _TRANSFER))  # the incoming frames that move delivery-ids


class FrameError(ValueError):
    """A performative this module cannot read (the frame is then passed on as it is)."""


def _skip(buf: bytes, pos: int) -> int:
    """The position after the AMQP-encoded value at ``pos`` (its width follows from the constructor)."""
    code = buf[pos]
    if code == 0x00:  # described: descriptor, then value
        return _skip(buf, _skip(buf, pos + 1))
    width = code >> 4
    if width == 0x4:
        return pos + 1
    fixed = {0x5: 1, 0x6: 2, 0x7: 4, 0x8: 8, 0x9: 16}.get(width)
    if fixed is not None:
        return pos + 1 + fixed
    if width in (0xA, 0xC, 0xE):  # one-byte size
        return pos + 2 + buf[pos + 1]
    if width in (0xB, 0xD, 0xF):  # four-byte size
        return pos + 5 + int(struct.unpack_from(">I", buf, pos + 1)[0])
    raise FrameError(f"unknown AMQP constructor 0x{code:02x}")


def _uint(buf: bytes, pos: int) -> int | None:
    code = buf[pos]
    if code == _NULL:
        return None
    if code == 0x43:
        return 0
    if code == 0x52:
        return buf[pos + 1]
    if code == 0x70:
        return int(struct.unpack_from(">I", buf, pos + 1)[0])
    if code == 0x60:  # ushort (channel numbers)
        return int(struct.unpack_from(">H", buf, pos + 1)[0])
    raise FrameError(f"not an unsigned integer: 0x{code:02x}")


def _encode_uint(value: int) -> bytes:
    if value == 0:
        return b"\x43"
    if value < 0x100:
        return bytes([0x52, value])
    return b"\x70" + struct.pack(">I", value)


@dataclass
class _Performative:
    """A frame's performative list, split into its encoded fields."""

    frame: bytes
    code: int
    fields: list[bytes]
    end: int  # where the payload (after the list) begins

    @classmethod
    def parse(cls, frame: bytes) -> _Performative | None:
        doff = frame[4] * 4
        if frame[5] != _AMQP_FRAME or len(frame) <= doff + 3 or frame[doff : doff + 2] != b"\x00\x53":
            return None
        code, at = frame[doff + 2], doff + 3
        constructor = frame[at]
        if constructor == 0x45:
            return cls(frame, code, [], at + 1)
        if constructor == 0xC0:
            count, pos, end = frame[at + 2], at + 3, at + 2 + frame[at + 1]
        elif constructor == 0xD0:
            size, count = struct.unpack_from(">II", frame, at + 1)
            pos, end = at + 9, at + 5 + size
        else:
            return None
        fields = []
        for _ in range(count):
            after = _skip(frame, pos)
            fields.append(frame[pos:after])
            pos = after
        return cls(frame, code, fields, end)

    def field(self, index: int) -> bytes:
        return self.fields[index] if index < len(self.fields) else bytes([_NULL])

    def encode(self, fields: list[bytes]) -> bytes:
        """The frame with ``fields`` as its performative list and the same payload."""
        body = b"".join(fields)
        if len(body) + 1 <= 0xFF:
            encoded = bytes([0xC0, len(body) + 1, len(fields)]) + body
        else:
            encoded = b"\xd0" + struct.pack(">II", len(body) + 4, len(fields)) + body
        doff = self.frame[4] * 4
        head = self.frame[_FRAME_HEADER_LEN : doff + 3]  # extended header and the descriptor
        rest = head + encoded + self.frame[self.end :]
        return struct.pack(">I", _FRAME_HEADER_LEN + len(rest)) + self.frame[4:_FRAME_HEADER_LEN] + rest


def _channel(frame: bytes) -> int:
    return int(struct.unpack_from(">H", frame, 6)[0])


@dataclass
class DeliveryIds:
    """One connection's view of the client's delivery-ids (proton transports carry one each)."""

    unread: bytearray = field(default_factory=bytearray)  # incoming bytes not yet a whole frame
    expected: dict[int, int] = field(default_factory=dict)  # client channel -> next id proton expects
    # (client channel, handle) -> (client's id, our id) of a multi-frame transfer under way
    continuing: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    # client channel -> our id -> client's id, for renumbered unsettled deliveries
    renumbered: dict[int, dict[int, int]] = field(default_factory=dict)
    client_channel: dict[int, int] = field(default_factory=dict)  # our channel -> the client's

    # -- incoming -----------------------------------------------------------------------------
    def incoming(self, data: bytes) -> bytes:
        """The bytes to hand to proton for ``data``: whole frames, renumbered where needed.

        A partial frame waits here for the rest; frames that need no change are not copied.
        """
        if self.unread:
            self.unread += data
            buf: bytes | bytearray = self.unread
        else:
            buf = data
        pos, changes = 0, []
        while True:
            if buf[pos : pos + 4] == b"AMQP":
                if len(buf) - pos < _PROTOCOL_HEADER_LEN:
                    break
                pos += _PROTOCOL_HEADER_LEN
                continue
            if len(buf) - pos < 4:
                break
            (size,) = struct.unpack_from(">I", buf, pos)
            if size < _FRAME_HEADER_LEN or len(buf) - pos < size:
                break
            doff = pos + buf[pos + 4] * 4  # the performative's descriptor, inline: this runs for every frame
            if size > doff - pos + 2 and buf[pos + 5] == _AMQP_FRAME and buf[doff + 2] in _SESSION_CODES:
                frame = bytes(buf[pos : pos + size])
                changed = self._incoming_frame(frame)
                if changed is not frame:
                    changes.append((pos, pos + size, changed))
            pos += size
        whole = buf if isinstance(buf, bytes) and pos == len(buf) else bytes(buf[:pos])
        if buf is self.unread:
            del self.unread[:pos]
        else:
            self.unread += buf[pos:]
        if not changes:
            return whole
        pieces, at = [], 0
        for start, end, replacement in changes:
            pieces += [whole[at:start], replacement]
            at = end
        pieces.append(whole[at:])
        return b"".join(pieces)

    def _incoming_frame(self, frame: bytes) -> bytes:
        try:
            performative = _Performative.parse(frame)
        except (FrameError, IndexError, struct.error):
            return frame
        if performative is None:
            return frame
        channel = _channel(frame)
        if performative.code == _TRANSFER:
            return self._transfer(performative, channel)
        # A session begins or ends on the channel: proton counts its delivery-ids afresh.
        self.expected.pop(channel, None)
        self.renumbered.pop(channel, None)
        self.continuing = {k: v for k, v in self.continuing.items() if k[0] != channel}
        return frame

    def _transfer(self, transfer: _Performative, channel: int) -> bytes:
        handle = _uint(transfer.field(0), 0)
        sent_id = _uint(transfer.field(1), 0)
        more = _bool(transfer.field(5))
        key = (channel, handle or 0)
        under_way = self.continuing.get(key)
        if under_way is not None:  # a continuation frame: same delivery, same id as its first frame
            if not more:
                del self.continuing[key]
            if sent_id is None or sent_id == under_way[1]:
                return transfer.frame
            return self._with_id(transfer, under_way[1])
        if sent_id is None:
            return transfer.frame
        our_id = self.expected.get(channel, sent_id)  # proton starts counting at the first transfer
        self.expected[channel] = (our_id + 1) & 0xFFFFFFFF
        if more:
            self.continuing[key] = (sent_id, our_id)
        if sent_id == our_id:
            return transfer.frame
        settled = _bool(transfer.field(4))
        if not settled:
            self.renumbered.setdefault(channel, {})[our_id] = sent_id
        return self._with_id(transfer, our_id)

    @staticmethod
    def _with_id(transfer: _Performative, delivery_id: int) -> bytes:
        fields = list(transfer.fields)
        fields[1] = _encode_uint(delivery_id)
        return transfer.encode(fields)

    # -- outgoing -----------------------------------------------------------------------------
    def concerns(self, frame: bytes) -> bool:
        """Whether ``outgoing`` may change our frame: a session's begin (its channel is mapped), or a
        disposition once deliveries were renumbered (most connections never have any)."""
        doff = frame[4] * 4
        if len(frame) <= doff + 2 or frame[5] != _AMQP_FRAME:
            return False
        code = frame[doff + 2]
        return code == _BEGIN or (code == _DISPOSITION and bool(self.renumbered))

    def outgoing(self, frame: bytes) -> list[bytes]:
        """Our frame as the client must see it: dispositions name the client's own delivery-ids."""
        code = _descriptor_code(frame)
        if code == _BEGIN:
            self._map_channel(frame)
        if code != _DISPOSITION or not self.renumbered:
            return [frame]
        try:
            disposition = _Performative.parse(frame)
            if disposition is None or not _bool(disposition.field(0)):  # role true: we are the receiver
                return [frame]
            channel = self.client_channel.get(_channel(frame), _channel(frame))
            ids = self.renumbered.get(channel)
            first = _uint(disposition.field(1), 0)
            if not ids or first is None:
                return [frame]
            last = _uint(disposition.field(2), 0)
            settled = _bool(disposition.field(3))
        except (FrameError, IndexError, struct.error):
            return [frame]
        ours = range(first, (first if last is None else last) + 1)
        if not any(i in ids for i in ours):
            return [frame]
        frames = []
        for our_id in ours:  # one disposition per delivery: the client's ids need not be contiguous
            client_id = ids.pop(our_id, our_id) if settled else ids.get(our_id, our_id)
            fields = list(disposition.fields)
            fields[1] = _encode_uint(client_id)
            if len(fields) > 2:
                fields[2] = bytes([_NULL])
            frames.append(disposition.encode(fields))
        return frames

    def _map_channel(self, frame: bytes) -> None:
        try:
            begin = _Performative.parse(frame)
            remote = _uint(begin.field(0), 0) if begin is not None else None
        except (FrameError, IndexError, struct.error):
            return
        if remote is not None:
            self.client_channel[_channel(frame)] = remote


def _descriptor_code(frame: bytes) -> int | None:
    """The performative code of a frame (None for SASL, heartbeat or other frames)."""
    doff = frame[4] * 4
    if len(frame) > doff + 2 and frame[5] == _AMQP_FRAME and frame[doff : doff + 2] == b"\x00\x53":
        return frame[doff + 2]
    return None


def _bool(encoded: bytes) -> bool:
    return encoded[0] == 0x41 or (encoded[0] == 0x56 and encoded[1] != 0)
