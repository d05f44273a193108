"""One TLS listener per namespace port: the client's first bytes say which protocol it speaks.

An AMQP client opens with the protocol header ``AMQP`` (the SDKs send the SASL one); anything
else is HTTP, which the aiohttp application answers: the management APIs, the token endpoint,
and the WebSocket upgrade of ``/$servicebus/websocket``.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from federator_emulator.edge.bridge import Adopt, AmqpBridge

logger = logging.getLogger(__name__)

_AMQP_HEADER = b"AMQP"


@dataclass
class Connections:
    """The AMQP connections a port has bridged to the broker (to abort them when the emulator stops)."""

    bridges: weakref.WeakSet[AmqpBridge] = field(default_factory=weakref.WeakSet)
    starting: set[asyncio.Task[None]] = field(default_factory=set)

    def abort(self) -> None:
        for bridge in list(self.bridges):
            bridge.abort()


class FirstBytes(asyncio.Protocol):
    """Reads until the protocol is known, then hands the connection over."""

    def __init__(
        self, http: Callable[[], web.RequestHandler], adopt: Adopt, connections: Connections
    ) -> None:
        self._http = http
        self._adopt = adopt
        self._connections = connections
        self._transport: asyncio.Transport | None = None
        self._buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) < len(_AMQP_HEADER) and _AMQP_HEADER.startswith(self._buffer):
            return  # not enough to tell yet
        assert self._transport is not None
        if self._buffer.startswith(_AMQP_HEADER):
            self._to_broker(self._transport)
        else:
            self._to_http(self._transport)

    def _to_broker(self, transport: asyncio.Transport) -> None:
        bridge = AmqpBridge(transport, self._adopt)
        self._connections.bridges.add(bridge)
        task = asyncio.get_running_loop().create_task(bridge.start(self._buffer))
        self._connections.starting.add(task)
        task.add_done_callback(self._connections.starting.discard)

    def _to_http(self, transport: asyncio.Transport) -> None:
        handler = self._http()
        transport.set_protocol(handler)
        handler.connection_made(transport)
        handler.data_received(self._buffer)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        logger.debug("connection closed before its protocol was known: %s", exc)
