"""A proton acceptor that sets up server-side SASL before the first byte is exchanged.

The SDKs always open with a SASL header and use ANONYMOUS (authentication happens later
through CBS). proton's stock acceptor binds the transport without SASL, and configuring
it from an event handler is too late because the transport may already have produced
its plain AMQP header, so the accept step is done here.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from proton import Transport, Url
from proton._io import IO
from proton._reactor import Acceptor, Container
from proton.handlers import IOHandler

logger = logging.getLogger(__name__)


class SaslAcceptor(Acceptor):
    def __init__(self, container: Container, host: str, port: int, handler: Any) -> None:
        # Not super().__init__: proton's IO.listen leaks its socket when bind fails (port taken).
        self._ssl_domain = None
        self._reactor = container
        self._handler = handler
        self.socket = socket.create_server((host, port), backlog=128)
        self.socket.setblocking(False)
        self.port: int = self.socket.getsockname()[1]
        selectable: Any = container.selectable(handler=self, delegate=self.socket)
        selectable.reading = True
        selectable._transport = None
        self._selectable = selectable
        container.update(selectable)

    def on_selectable_readable(self, event: Any) -> None:
        sock, name = IO.accept(self._selectable)  # type: ignore[arg-type]  # delegates to the socket
        logger.debug("accepted AMQP connection from %s", name)
        self.adopt(sock, name)

    def adopt(self, sock: socket.socket, name: tuple[str, int] = ("bridge", 0)) -> None:
        """Serve a connected socket as an AMQP connection (reactor thread): an accepted one, or one
        end of a socket pair carrying a connection whose TLS or WebSocket layer ended elsewhere."""
        sock.setblocking(False)
        container = self._reactor
        connection: Any = container.connection(self._handler or container.handler)
        connection._acceptor = self
        connection.url = Url(host=name[0], port=name[1])  # type: ignore[no-untyped-call]
        transport = Transport(Transport.SERVER)
        sasl = transport.sasl()
        sasl.allowed_mechs("ANONYMOUS")
        transport.bind(connection)
        selectable: Any = container.selectable(delegate=sock)
        selectable._transport = transport
        transport._selectable = selectable
        IOHandler.update(transport, selectable, container.now)
