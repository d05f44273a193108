"""Reading a receiver's AMQP frames from its socket in chunks, and its transfers in one step.

The SDK's transport reads every frame with two socket reads (the 8-byte header, then the body), each
through its own buffer bookkeeping, and copies the frame once more into a ``BytesIO`` kept only for a
timeout: for a receiver of small events that costs about as much CPU as decoding them. A
:class:`ChunkedFrames` reads what the socket has (a TLS record, up to 16 KB: a dozen 1 KB events) and
cuts frames out of it, as the transport's ``read``. Its contract is the SDK's ``read``:
``(header, channel, body)`` per frame (``body`` a fresh buffer, so nothing decoded from it can change
later); a socket timeout raises ``TimeoutError`` and keeps the bytes of a partial frame for the next
call; any other socket error marks the transport disconnected and is raised.

The SDK then passes each frame through four layers (connection, session, link, client) and decodes
every AMQP value into a new ``memoryview`` slice. A :class:`TransferFrames`, as the connection's
``_read_frame``, decodes a transfer that is a whole message on a receiver link by index
(``sources/amqp_decoding.py``) and hands it to the link's callback with the counters those layers keep,
in one step. Every other frame (and any transfer it is not sure of), link credit, dispositions and
errors stay the SDK's.
"""

from __future__ import annotations

import errno
import struct
import time
from ssl import SSLError
from typing import Any

from azure.eventhub._pyamqp._decode import decode_empty_frame, decode_frame
from azure.eventhub._pyamqp.receiver import ReceiverLink

from federator_spark.sources import amqp_decoding

_HEADER = 8
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_CHUNK = 65536
_PROTOCOL_HEADER = b"AMQP"  # a protocol header, not a frame (only before the connection opens)
_RETRY = {errno.EAGAIN, errno.EINTR, errno.ENOENT, errno.EWOULDBLOCK}  # the SDK's read retries these


def install(transport: Any) -> None:
    """Read ``transport``'s frames in chunks from now on (a transport with a plain or TLS socket; one
    over WebSockets reads messages, not a byte stream, and keeps the SDK's read)."""
    from azure.eventhub._pyamqp._transport import WebSocketTransport

    if isinstance(transport, WebSocketTransport) or transport.sock is None:
        return
    if not isinstance(transport.read, ChunkedFrames):
        transport.read = ChunkedFrames(transport)


def read_transfers(connection: Any) -> None:
    """Handle ``connection``'s transfers with :class:`TransferFrames` from now on (once its transport
    reads with :class:`ChunkedFrames`; otherwise the SDK's reading stays)."""
    frames = connection._transport.read
    installed = isinstance(connection.__dict__.get("_read_frame"), TransferFrames)
    if isinstance(frames, ChunkedFrames) and not installed:
        connection._read_frame = TransferFrames(connection, frames)


def performative(header: bytes, body: bytes) -> memoryview:
    """Where a frame's performative starts, as the SDK reads the data offset (kept as it is: the
    offset's words taken as bytes, 0 for every frame Event Hubs sends)."""
    return memoryview(body)[header[4] - 2 :]


class ChunkedFrames:
    def __init__(self, transport: Any) -> None:
        self.transport = transport
        # Bytes the SDK's own reads kept from a partial frame come first.
        self.buffer = bytearray(transport._read_buffer.read())
        self.start = 0

    def __call__(self, verify_frame_type: int | None = 0) -> tuple[memoryview, int, memoryview | None]:
        header, channel, body = self.frame(verify_frame_type)
        return memoryview(header), channel, None if body is None else performative(header, body)

    def frame(self, verify_frame_type: int | None = 0) -> tuple[bytes, int, bytes | None]:
        """The next frame's header, channel and body (from the frame's 9th byte; None for a protocol
        header), each a fresh ``bytes``."""
        with self.transport.socket_lock:
            self._fill(_HEADER)
            header = bytes(self.buffer[self.start : self.start + _HEADER])
            channel = _U16.unpack_from(header, 6)[0]
            if header[:4] == _PROTOCOL_HEADER:
                self.start += _HEADER
                return header, channel, None
            size = _U32.unpack_from(header)[0]
            if verify_frame_type is not None and header[5] != verify_frame_type:
                raise ValueError(f"Received invalid frame type: {header[5]}, expected: {verify_frame_type}")
            self._fill(size)
            body = bytes(self.buffer[self.start + _HEADER : self.start + size])
            self.start += size
            return header, channel, body

    def _fill(self, wanted: int) -> None:
        """Read until the buffer holds ``wanted`` bytes from ``start`` (or raise, keeping what it has)."""
        if len(self.buffer) - self.start >= wanted:
            return
        if self.start:
            del self.buffer[: self.start]
            self.start = 0
        while len(self.buffer) < wanted:
            try:
                chunk = self.transport.sock.recv(max(_CHUNK, wanted - len(self.buffer)))
            except TimeoutError:
                raise
            except OSError as error:
                if isinstance(error, SSLError) and "timed out" in str(error):
                    raise TimeoutError() from error
                if error.errno in _RETRY:
                    continue
                self.transport.connected = False
                raise
            if not chunk:
                self.transport.connected = False
                raise OSError("Server unexpectedly closed connection")
            self.buffer += chunk


class TransferFrames:
    """What the SDK's ``Connection._read_frame`` does, with a receiver link's whole-message transfers
    handled in one step."""

    def __init__(self, connection: Any, frames: ChunkedFrames) -> None:
        self.connection = connection
        self.frames = frames
        self.process = connection._process_incoming_frame  # the SDK's handling of every other frame

    def __call__(self, wait: bool | float = True, **kwargs: Any) -> bool:
        """Read and handle one frame; True when the SDK's listen loop should stop for now."""
        try:
            if wait is True:
                with self.connection._transport.block():
                    header, channel, body = self.frames.frame(**kwargs)
            else:
                header, channel, body = self.frames.frame(**kwargs)
        except TimeoutError:
            return bool(self.process(None, None))  # the SDK's "nothing yet"
        if not body:
            return bool(self.process(channel, decode_empty_frame(memoryview(header))))
        if header[4] == 2:  # no extended header: the body starts the performative
            decoded = amqp_decoding.transfer(body)
            if decoded is not None:
                fields, payload = decoded
                fields.append(memoryview(body)[payload:])
                if self._deliver(channel, fields, body, payload):
                    return False
                return bool(self.process(channel, (0x14, fields)))
        return bool(self.process(channel, decode_frame(performative(header, body))))

    def _deliver(self, channel: int, fields: list[Any], body: bytes, payload: int) -> bool:
        """The SDK's steps for a transfer that is a whole message on an attached receiver link
        (``Connection._process_incoming_frame``, ``Session._incoming_transfer``,
        ``ReceiverLink._incoming_transfer``); False, having changed nothing, for any other transfer."""
        if len(fields) < 7 or fields[5]:  # no "more" field, or more frames of this delivery follow
            return False
        session = self.connection._incoming_endpoints.get(channel)
        attached = session._input_handles.get(fields[0]) if session is not None else None
        if not isinstance(attached, ReceiverLink):
            return False
        link: Any = attached  # read where the SDK's own annotations are missing or too narrow
        if link._received_payload or link.network_trace:
            return False
        self.connection._last_frame_received_time = time.time()
        session.next_incoming_id += 1
        session.remote_outgoing_window -= 1
        session.incoming_window -= 1
        link.current_link_credit -= 1
        link.delivery_count += 1
        link.received_delivery_id = fields[1]
        if fields[1] is not None:
            link._first_frame = fields
        first: list[Any] = link._first_frame
        link._received_delivery_tags.add(first[2])
        state = link._process_incoming_message(first, amqp_decoding.message(body, payload))
        if not fields[4] and state:  # an unsettled delivery the callback gave an outcome
            link._outgoing_disposition(
                first=first[1],
                last=first[1],
                delivery_tag=first[2],
                settled=True,
                state=state,
                batchable=None,
            )
        if session.incoming_window == 0:
            session.incoming_window = session.target_incoming_window
            session._outgoing_flow()
        return True
