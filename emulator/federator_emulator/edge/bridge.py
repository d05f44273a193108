"""Carry AMQP bytes between a client connection that ends here (TLS) and the proton reactor.

``Adopt`` hands one end of a fresh socket pair to the reactor thread, which serves it like an
accepted AMQP connection; this module pumps bytes between the client and the other end, pausing
either side while the other cannot keep up.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

logger = logging.getLogger(__name__)

# Hands a connected socket to the proton reactor (thread-safe); it then owns and closes it.
Adopt = Callable[[socket.socket], None]


def pipe_to_broker(adopt: Adopt) -> socket.socket:
    """A socket whose peer the broker now serves as an AMQP connection."""
    ours, theirs = socket.socketpair()
    try:
        adopt(theirs)
    except BaseException:
        ours.close()
        theirs.close()
        raise
    return ours


class _Half(asyncio.Protocol):
    """One side of the pump: what it receives is written to ``peer``; closing either closes both."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.early = bytearray()  # what arrived before the peer was connected

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)
        else:
            self.early += data

    def link(self, peer: _Half) -> None:
        """Connect the two halves, and pass on what arrived before."""
        self.peer, peer.peer = peer, self
        for half, other in ((self, peer), (peer, self)):
            if other.transport is None:
                continue
            if half.transport is None or half.transport.is_closing():  # gone while we connected
                other.transport.close()
            elif half.early:
                other.transport.write(bytes(half.early))
                half.early.clear()

    def pause_writing(self) -> None:  # our buffer is full: stop reading what fills it
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def eof_received(self) -> bool:
        return False  # close our side; connection_lost closes the peer

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None and not self.peer.transport.is_closing():
            self.peer.transport.close()


class AmqpBridge:
    """Pumps one client connection (already open, its first bytes read) to the broker."""

    def __init__(self, client: asyncio.Transport, adopt: Adopt) -> None:
        self.client = _Half()
        self.client.connection_made(client)
        client.set_protocol(self.client)
        self._adopt = adopt

    async def start(self, first_bytes: bytes) -> None:
        self.client.early += first_bytes
        broker = _Half()
        try:
            sock = pipe_to_broker(self._adopt)
            await asyncio.get_running_loop().connect_accepted_socket(lambda: broker, sock=sock)
        except Exception:
            logger.exception("could not hand an AMQP over TLS connection to the broker")
            self.abort()
            return
        self.client.link(broker)

    def abort(self) -> None:
        if self.client.transport is not None:
            self.client.transport.abort()
