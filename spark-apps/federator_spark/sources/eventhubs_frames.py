"""Reading a receiver's AMQP frames from its socket in chunks, under the SDK's own frame handling.

The SDK's transport reads every frame with two socket reads (the 8-byte header, then the body), each
through its own buffer bookkeeping, and copies the frame once more into a ``BytesIO`` kept only for a
timeout: for a receiver of small events that costs about as much CPU as decoding them. A
:class:`ChunkedFrames` reads what the socket has (a TLS record, up to 16 KB: a dozen 1 KB events) and
cuts frames out of it. It replaces only the transport's ``read``; decoding, link credit, disposition
and errors stay the SDK's.

Its contract is the SDK's ``read``: ``(header, channel, body)`` per frame (``body`` a fresh buffer, so
nothing decoded from it can change later); a socket timeout raises ``TimeoutError`` and keeps the
bytes of a partial frame for the next call; any other socket error marks the transport disconnected
and is raised.
"""

from __future__ import annotations

import errno
import struct
from ssl import SSLError
from typing import Any

_HEADER = 8
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


class ChunkedFrames:
    def __init__(self, transport: Any) -> None:
        self.transport = transport
        # Bytes the SDK's own reads kept from a partial frame come first.
        self.buffer = bytearray(transport._read_buffer.read())
        self.start = 0

    def __call__(self, verify_frame_type: int | None = 0) -> tuple[memoryview, int, memoryview | None]:
        with self.transport.socket_lock:
            self._fill(_HEADER)
            header = memoryview(bytes(self.buffer[self.start : self.start + _HEADER]))
            channel = struct.unpack(">H", header[6:])[0]
            if header[:4] == _PROTOCOL_HEADER:
                self.start += _HEADER
                return header, channel, None
            size = struct.unpack(">I", header[:4])[0]
            if verify_frame_type is not None and header[5] != verify_frame_type:
                raise ValueError(f"Received invalid frame type: {header[5]}, expected: {verify_frame_type}")
            self._fill(size)
            body = memoryview(bytes(self.buffer[self.start + _HEADER : self.start + size]))
            self.start += size
            # The SDK's reading of the data offset, kept as it is: 0 for every frame Event Hubs sends.
            return header, channel, body[header[4] - 2 :]

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
