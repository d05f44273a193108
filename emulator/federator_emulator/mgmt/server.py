"""The TLS listeners: one port per namespace (plus ``amqpsPort`` if configured), on a thread of their own.

Each port serves HTTPS management, AMQP over TLS and AMQP over WebSockets (``federator_emulator.edge``),
so one host name serves every client. Each namespace gets its own port because
``ServiceBusAdministrationClient`` always calls ``https://<fully_qualified_namespace>`` with entity
paths that do not name the namespace (ATOM). ARM and DNS paths do name their namespace or zone, so
every port serves them for all namespaces. Sockets are bound when the server is built, so the ports
are known (and the ready file can be written) before the thread starts; connections wait in the backlog.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from federator_emulator.edge import websocket
from federator_emulator.edge.listener import Connections, FirstBytes
from federator_emulator.identity.endpoint import TokenEndpoint
from federator_emulator.identity.tenant import Tenant
from federator_emulator.mgmt import authorization, tls
from federator_emulator.mgmt.arm import ArmApi
from federator_emulator.mgmt.atom import AtomApi, unrouted_as_atom
from federator_emulator.mgmt.authorization import Authorizer
from federator_emulator.mgmt.common import Backend, Submitter
from federator_emulator.mgmt.dns import DnsApi, DnsStore
from federator_emulator.ports import hold as hold_port
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)

_WILDCARDS = ("0.0.0.0", "::", "")
# In-flight requests get this long to finish when the emulator stops.
_SHUTDOWN_SECONDS = 1.0


def client_host(bind_host: str) -> str:
    """The SDKs need a name they can connect to; a wildcard bind is reached over loopback."""
    return "localhost" if bind_host in (*_WILDCARDS, "127.0.0.1") else bind_host


def _listening(sock: socket.socket) -> bool:
    return sock.fileno() != -1 and bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)


# Hands an AMQP connection that ended TLS (or WebSockets) here to the namespace's broker.
AdoptInto = Callable[[str, socket.socket], None]


class ManagementServer:
    """HTTPS for every namespace; ``start`` serves on a thread, ``stop`` joins it."""

    def __init__(
        self,
        submitter: Submitter,
        namespaces: dict[str, NamespaceState],
        dns: DnsStore,
        directory: Path,
        adopt: AdoptInto,
        tenant: Tenant,
        tls_host_names: list[str],
    ) -> None:
        self._sockets: dict[str, socket.socket] = {}
        self._extra_sockets: dict[str, socket.socket] = {}  # amqpsPort: the same services again
        self._adopt = adopt
        self._hosts = {name: state.config.host for name, state in namespaces.items()}
        try:
            hosts = ["localhost", "127.0.0.1", "::1"]
            hosts += [ns.config.host for ns in namespaces.values() if ns.config.host not in _WILDCARDS]
            hosts += tls_host_names
            self.tls = tls.issue(directory, hosts)
            for name, state in namespaces.items():
                self._sockets[name] = _bind(state.config.host, state.config.https_port)
                if state.config.amqps_port is not None:
                    self._extra_sockets[name] = _bind(state.config.host, state.config.amqps_port)
        except BaseException:
            self.close()
            raise
        self.ports = {name: sock.getsockname()[1] for name, sock in self._sockets.items()}
        self.amqps_ports = {name: sock.getsockname()[1] for name, sock in self._extra_sockets.items()}
        endpoints = {
            name: f"https://{client_host(namespaces[name].config.host)}:{port}"
            for name, port in self.ports.items()
        }
        self.backend = Backend(submitter, namespaces, dns.zones, endpoints)
        self.tenant = tenant
        self._authorizer = Authorizer(tenant, self.backend)
        self.dns = dns
        self._thread: threading.Thread | None = None
        self._runners: dict[str, web.AppRunner] = {}
        self._servers: dict[str, list[asyncio.Server]] = {}
        self._connections = Connections()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._started = threading.Event()

    @property
    def ca_path(self) -> Path:
        return self.tls.ca_path

    def _app(self, namespace: str) -> web.Application:
        app = web.Application(client_max_size=4 * 1024 * 1024, middlewares=[unrouted_as_atom])
        app[authorization.KEY] = self._authorizer
        app.add_routes([websocket.route(lambda sock: self._adopt(namespace, sock))])
        app.add_routes(TokenEndpoint(self.tenant).routes())
        # ARM and DNS first: their paths begin with /subscriptions/, which ATOM's would swallow.
        app.add_routes(ArmApi(self.backend).routes())
        app.add_routes(DnsApi(self.dns).routes())
        app.add_routes(AtomApi(self.backend, namespace).routes())
        return app

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        try:
            for name in self._sockets:
                runner = web.AppRunner(self._app(name), access_log=None, shutdown_timeout=_SHUTDOWN_SECONDS)
                await runner.setup()
                self._runners[name] = runner
                await self._open(name)
            logger.info("management plane serving %s", self.backend.endpoints)
        finally:
            self._started.set()
        try:
            await self._stop_event.wait()
        finally:
            for name in self._runners:
                self._close(name)
            self._connections.abort()
            for runner in self._runners.values():
                await runner.cleanup()
            await asyncio.sleep(0)  # let the aborted transports run connection_lost

    async def _open(self, name: str) -> None:
        """Serve the namespace's ports."""
        runner = self._runners[name]
        self._servers[name] = [
            await self._listen(sock, runner, name, self._connections) for sock in self._listening(name)
        ]

    def _listening(self, name: str) -> list[socket.socket]:
        """The namespace's listening sockets, bound again on the same ports when an outage closed them."""
        found = []
        for sockets, ports in ((self._sockets, self.ports), (self._extra_sockets, self.amqps_ports)):
            sock = sockets.get(name)
            if sock is None:
                continue
            if not _listening(sock):  # held through an outage
                sock.close()
                sock = sockets[name] = _bind(self._hosts[name], ports[name])
            found.append(sock)
        return found

    def set_outage(self, name: str, down: bool, timeout: float = 10.0) -> None:
        """Take the namespace's ports down (new connections refused, open ones aborted) or serve them again.
        Thread-safe, but not from the management plane's own thread."""
        assert self._loop is not None, "the management plane is not serving"

        async def apply() -> None:
            if down:
                self._close(name)
            elif name not in self._servers:
                await self._open(name)

        asyncio.run_coroutine_threadsafe(apply(), self._loop).result(timeout)

    def _close(self, name: str) -> None:
        """Stop listening on the namespace's ports (held, so that they are its own again after the
        outage) and abort its open connections."""
        for listener in self._servers.pop(name, []):
            listener.close()
        for sockets, ports_of in ((self._sockets, self.ports), (self._extra_sockets, self.amqps_ports)):
            if name in sockets:
                sockets[name].close()
                sockets[name] = hold_port(self._hosts[name], ports_of[name])
        # A TLS close waits for the client's close_notify, which pooled client connections never send;
        # abort them so no socket outlives the loop.
        http = self._runners[name].server
        for connection in list(http.connections) if http is not None else []:
            if connection.transport is not None:
                connection.transport.abort()

    async def _listen(
        self, sock: socket.socket, runner: web.AppRunner, namespace: str, connections: Connections
    ) -> asyncio.Server:
        http = runner.server
        assert http is not None

        def adopt(amqp: socket.socket) -> None:
            self._adopt(namespace, amqp)

        return await asyncio.get_running_loop().create_server(
            lambda: FirstBytes(http, adopt, connections), sock=sock, ssl=self.tls.context
        )

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except Exception:
            logger.exception("the management plane stopped with an error")
            self._started.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="federator-emulator-mgmt", daemon=True)
        self._thread.start()
        self._started.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, join the thread, and release sockets and the temporary CA directory."""
        if self._thread is not None:
            if self._loop is not None and self._stop_event is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._stop_event.set)
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("management plane thread did not stop")
            self._thread = None
        self.close()

    def close(self) -> None:
        for sock in [*self._sockets.values(), *self._extra_sockets.values()]:
            sock.close()
