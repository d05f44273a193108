"""Wiring: namespaces + proton container + ready file + signals.

``start_emulator`` runs the emulator on a background thread (tests, local mode);
``run_forever`` is the ``federator emulator`` command, blocking in the foreground.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TypeVar

import yaml
from proton import Event, Handler
from proton._reactor import Task
from proton.reactor import ApplicationEvent, Container, EventInjector

from federator_contract.emulatorconfig import (
    DEFAULT_KEY_NAME,
    TOKEN_EXCHANGE_AUDIENCE,
    EmulatorConfig,
    NamespaceConfig,
)
from federator_contract.files import write_atomically
from federator_emulator import auth
from federator_emulator.amqp import padshim
from federator_emulator.amqp.broker import Broker, Guard
from federator_emulator.amqp.listener import SaslAcceptor
from federator_emulator.identity.directory import ADMIN_CLIENT_ID, ADMIN_CLIENT_SECRET
from federator_emulator.identity.tenant import Tenant
from federator_emulator.identity.tokens import WORKLOAD_ISSUER
from federator_emulator.mgmt.dns import DnsStore
from federator_emulator.mgmt.server import ManagementServer, client_host
from federator_emulator.namespace_endpoint import NamespaceEndpoint
from federator_emulator.outages import OutageFile
from federator_emulator.ports import hold as hold_port
from federator_emulator.saskeys import with_key_values
from federator_emulator.state.journal import FileJournal, Journal, NullJournal, Record, read_journal
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)
T = TypeVar("T")

# How often locks, TTLs, scheduled messages and retention are checked. Lock and TTL
# precision in tests is therefore about this much.
TICK_SECONDS = 0.05
EXPIRY_CHECK_SECONDS = 1.0  # how often links are checked for an expired token
_GRACEFUL_STOP_SECONDS = 2.0


class _Control(Handler):
    """Container-level handler: periodic tick and requests from other threads."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    def on_timer_task(self, event: Event) -> None:
        self.emulator._on_tick()

    def on_federator_call(self, event: ApplicationEvent) -> None:
        function, future = event.subject
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(function())
        except BaseException as exc:
            future.set_exception(exc)

    def on_federator_stop(self, event: ApplicationEvent) -> None:
        self.emulator._shutdown()


@dataclass
class Emulator:
    """All namespaces of one config served by one proton container."""

    config: EmulatorConfig
    data_dir: Path | None = None
    namespaces: dict[str, NamespaceState] = field(default_factory=dict)
    endpoints: dict[str, NamespaceEndpoint] = field(default_factory=dict)

    def __post_init__(self) -> None:
        padshim.install()
        self._control = _Control(self)
        self._container = Container(self._control)
        self._injector = EventInjector()
        self._container.selectable(self._injector)
        self._acceptors: dict[str, SaslAcceptor] = {}
        self._brokers: dict[str, Broker] = {}
        self._down: dict[str, socket.socket] = {}  # namespaces in an outage: their held AMQP ports
        self._journals: list[Journal] = []
        self._timer: Task | None = None
        self._next_expiry_check = 0.0
        self._stopping = False
        self.management: ManagementServer | None = None
        # Without a data dir, the CA and the token signing key live in a directory removed on stop.
        self._scratch = (
            None if self.data_dir is not None else Path(tempfile.mkdtemp(prefix="federator-emulator-"))
        )
        files = self.data_dir or self._scratch
        assert files is not None
        files.mkdir(parents=True, exist_ok=True)
        try:
            self.config = with_key_values(self.config, files)
            self.tenant = Tenant(self.config.identity, files)
            for ns_config in self.config.namespaces:
                self._add_namespace(ns_config)
            # "_dns" cannot be a namespace's name (they start with a letter or digit).
            journal, records = self._open_journal("_dns")
            dns = DnsStore(self.config.dns_zones, journal)
            dns.replay(records)
            self.management = ManagementServer(
                self, self.namespaces, dns, files, self._adopt, self.tenant, self.config.tls_host_names
            )
            self.tenant.endpoints = list(self.management.backend.endpoints.values())
            for name, port in self.management.ports.items():
                self.endpoints[name] = dataclasses.replace(
                    self.endpoints[name],
                    https_port=port,
                    amqps_port=self.management.amqps_ports.get(name),
                    ca_path=self.management.ca_path,
                )
        except BaseException:
            self._release()
            raise

    def _open_journal(self, name: str) -> tuple[Journal, Iterable[Record]]:
        """The journal ``DIR/<name>.journal`` and the records it holds; nothing without a data dir."""
        if self.data_dir is None:
            return NullJournal(), ()
        journal = FileJournal(self.data_dir / f"{name}.journal", fsync=self.config.fsync)
        self._journals.append(journal)
        return journal, read_journal(journal.path)

    def _add_namespace(self, ns_config: NamespaceConfig) -> None:
        journal, records = self._open_journal(ns_config.name)
        state = NamespaceState(ns_config, journal)
        replayed = state.replay(records)
        if self.data_dir is not None:
            logger.info("namespace %s: replayed %d journal records", ns_config.name, replayed)
        broker = Broker(state, self.tenant)
        acceptor = SaslAcceptor(self._container, ns_config.host, ns_config.amqp_port, Guard(broker))
        host = client_host(ns_config.host)
        self.namespaces[ns_config.name] = state
        self._brokers[ns_config.name] = broker
        self._acceptors[ns_config.name] = acceptor
        self.endpoints[ns_config.name] = NamespaceEndpoint(
            name=ns_config.name,
            host=host,
            amqp_port=acceptor.port,
            connection_strings={
                name: auth.connection_string(host, acceptor.port, name, value)
                for name, value in state.keys.items()
            },
            https_port=0,  # filled in once the management server has bound its ports
            ca_path=Path(),
            arm=ns_config.arm.model_copy(update={"namespace_name": ns_config.arm_namespace_name}),
        )

    # -- running (reactor thread) ----------------------------------------------------------
    def run(self) -> None:
        """Serve until ``request_stop``; call on the thread that owns the emulator."""
        self._timer = self._container.schedule(TICK_SECONDS, self._control)
        logger.info("emulator serving %s", {n: e.amqp_port for n, e in self.endpoints.items()})
        try:
            if self.management is not None:
                self.management.start()
            self._container.run()
        finally:
            # HTTP handlers call into the reactor: stop them before the reactor's resources go.
            if self.management is not None:
                self.management.stop()
            self._release()

    def _release(self) -> None:
        """Close what the container does not own: listening sockets, journals, the wakeup pipe."""
        for acceptor in self._acceptors.values():
            acceptor.close()
            acceptor.socket.close()
        for held in self._down.values():
            held.close()
        for journal in self._journals:
            journal.close()
        for fd in self._injector.pipe:
            os.close(fd)
        if self.management is not None:
            self.management.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def _on_tick(self) -> None:
        for state in self.namespaces.values():
            state.tick()
            state.journal.commit()
        now = time.time()
        if now >= self._next_expiry_check:  # tokens expire by the second: no need to look every tick
            self._next_expiry_check = now + EXPIRY_CHECK_SECONDS
            for broker in self._brokers.values():
                broker.detach_expired(now)
        if not self._stopping:
            self._timer = self._container.schedule(TICK_SECONDS, self._control)

    def _shutdown(self) -> None:
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        for acceptor in self._acceptors.values():
            acceptor.close()
        for broker in self._brokers.values():
            _drop(broker)
        self._injector.close()

    def _amqp_outage(self, namespace: str, down: bool) -> None:
        """Close the namespace's AMQP port and its connections, or listen on that port again (reactor
        thread). Its state stays: what was sent before the outage is there after it."""
        acceptor = self._acceptors[namespace]
        host = self.namespaces[namespace].config.host
        if down and namespace not in self._down:
            acceptor.close()
            acceptor.socket.close()
            self._down[namespace] = hold_port(host, acceptor.port)
            _drop(self._brokers[namespace])
        elif not down and namespace in self._down:
            self._down.pop(namespace).close()
            guard = Guard(self._brokers[namespace])
            self._acceptors[namespace] = SaslAcceptor(self._container, host, acceptor.port, guard)

    # -- other threads -----------------------------------------------------------------------
    def _adopt(self, namespace: str, sock: socket.socket) -> None:
        """Serve an AMQP connection whose TLS or WebSocket layer ended on the TLS port (thread-safe)."""

        def serve() -> None:
            if namespace in self._down:  # bridged by the TLS port just before the outage closed it
                sock.close()
            else:
                self._acceptors[namespace].adopt(sock)

        self.submit(serve)

    def set_outage(self, namespace: str, down: bool) -> None:
        """A region outage as clients see it, for one namespace (``down``), or its end: its AMQP and TLS
        ports refuse connections and its open connections are closed, while the other namespaces keep
        serving. Thread-safe, from any thread but the reactor's and the management plane's."""
        if namespace not in self.namespaces:
            raise KeyError(f"no namespace {namespace!r} (the config has {', '.join(self.namespaces)})")
        self.call(lambda: self._amqp_outage(namespace, down))
        if self.management is not None:
            self.management.set_outage(namespace, down)
        logger.warning("namespace %s: %s", namespace, "down (outage)" if down else "serving again")

    def request_stop(self) -> None:
        """Ask the reactor thread to close everything and return from ``run`` (thread-safe)."""
        self._injector.trigger(ApplicationEvent("federator_stop"))

    def force_stop(self) -> None:
        """Make ``run`` return even if peers never answered our close (sets a flag only)."""
        self._container.stop()

    def call(self, function: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``function`` on the reactor thread and return its result (thread-safe).

        This is how a management plane changes namespace state while clients are connected.
        """
        return self.submit(function).result(timeout)

    def submit(self, function: Callable[[], T]) -> Future[T]:
        """Schedule ``function`` on the reactor thread; the future holds its result (thread-safe)."""
        future: Future[T] = Future()
        self._injector.trigger(ApplicationEvent("federator_call", subject=(function, future)))
        return future

    def ready_document(self) -> dict[str, Any]:
        first = next(iter(self.endpoints.values()))
        return {
            "namespaces": {name: e.ready_entry() for name, e in self.endpoints.items()},
            # ARM and DNS are served on every namespace's port; these name the first one.
            "armEndpoint": first.https_endpoint,
            "caCertificatePath": str(first.ca_path),
            "dnsZones": [
                z.model_dump(by_alias=True, exclude={"role_assignments"}) for z in self.config.dns_zones
            ],
            # The emulated Microsoft Entra tenant: AZURE_AUTHORITY_HOST, AZURE_TENANT_ID, and the built-in
            # administrator (Owner everywhere), a well-known placeholder like the default SAS key.
            "identity": {
                "authorityHost": first.https_endpoint,
                "tenantId": self.config.identity.tenant_id,
                "workloadIdentityIssuer": WORKLOAD_ISSUER,
                "adminClientId": ADMIN_CLIENT_ID,
                "adminClientSecret": ADMIN_CLIENT_SECRET,
            },
        }


def _drop(broker: Broker) -> None:
    """Close every AMQP connection of a namespace (reactor thread)."""
    for connection in list(broker.connections):
        connection.close()
        if connection.transport is not None:
            connection.transport.close_tail()


class RunningEmulator:
    """An emulator serving on a background thread; a context manager that stops it."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self._thread = threading.Thread(target=emulator.run, name="federator-emulator", daemon=True)
        self._thread.start()

    @property
    def namespaces(self) -> dict[str, NamespaceEndpoint]:
        return self.emulator.endpoints

    def namespace(self, name: str | None = None) -> NamespaceEndpoint:
        """A namespace's endpoint; without a name, the only (or first) one."""
        if name is None:
            return next(iter(self.emulator.endpoints.values()))
        return self.emulator.endpoints[name]

    def connection_string(self, namespace: str | None = None, key_name: str | None = None) -> str:
        endpoint = self.namespace(namespace)
        return endpoint.connection_strings[key_name] if key_name else endpoint.connection_string

    def key(self, namespace: str | None = None, key_name: str = DEFAULT_KEY_NAME) -> str:
        """The value of a namespace's SAS key (each namespace has its own unless the config opts out)."""
        return self.state(namespace).keys[key_name]  # keys never change while the emulator runs

    def state(self, namespace: str | None = None) -> NamespaceState:
        """Namespace state; only touch it through ``call`` while the emulator runs."""
        name = namespace or next(iter(self.emulator.namespaces))
        return self.emulator.namespaces[name]

    @property
    def ca_path(self) -> Path:
        """The CA certificate HTTPS clients must trust (``connection_verify=str(emu.ca_path)``)."""
        return self.namespace().ca_path

    @property
    def arm_endpoint(self) -> str:
        """Base URL for ARM and DNS clients (``base_url=``); every namespace's port serves them."""
        return self.namespace().https_endpoint

    def call(self, function: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``function`` on the emulator thread (see ``Emulator.call``)."""
        return self.emulator.call(function, timeout)

    def set_outage(self, namespace: str, down: bool) -> None:
        """Take one namespace down, or bring it back (see ``Emulator.set_outage``)."""
        self.emulator.set_outage(namespace, down)

    @property
    def authority_host(self) -> str:
        """``AZURE_AUTHORITY_HOST`` (or ``authority=``) for azure-identity: the token endpoint is served on
        every namespace's TLS port; this names the first one."""
        return self.namespace().https_endpoint

    @property
    def tenant_id(self) -> str:
        return self.emulator.config.identity.tenant_id

    def workload_identity_token(
        self, subject: str, audience: str = TOKEN_EXCHANGE_AUDIENCE, lifetime_seconds: int = 3600
    ) -> str:
        """A token from the emulator's workload issuer, as the AKS webhook projects one into a pod (write
        it to ``AZURE_FEDERATED_TOKEN_FILE``); a federated credential with no ``issuer`` trusts it."""
        return self.emulator.tenant.tokens.workload_token(subject, audience, lifetime_seconds)

    def ready_document(self) -> dict[str, Any]:
        """What ``--ready-file`` would contain for this emulator."""
        return self.emulator.ready_document()

    def stop(self, timeout: float = 10.0) -> None:
        if not self._thread.is_alive():
            return
        self.emulator.request_stop()
        self._thread.join(_GRACEFUL_STOP_SECONDS)
        if self._thread.is_alive():
            # Peers that never read our close frame must not keep us alive.
            self.emulator.force_stop()
            self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError("emulator thread did not stop")

    def __enter__(self) -> RunningEmulator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_emulator(config: EmulatorConfig | dict[str, Any], data_dir: Path | None = None) -> RunningEmulator:
    """Start serving in-process; use as ``with start_emulator(cfg) as emu: ...``."""
    if not isinstance(config, EmulatorConfig):
        config = EmulatorConfig.model_validate(config)
    return RunningEmulator(Emulator(config, data_dir))


def write_ready_file(path: Path, document: dict[str, Any]) -> None:
    write_atomically(path, json.dumps(document, indent=2) + "\n")


def run_forever(
    config_path: Path, data_dir: Path | None, ready_file: Path | None, outages: Path | None = None
) -> int:
    """The ``federator emulator`` command: serve until SIGTERM/SIGINT; returns the exit code.
    ``outages``: a file naming the namespaces to take down (``federator_emulator.outages``).

    0 after a clean stop, 1 if it cannot start (port taken, data dir unusable), 2 for a bad config.
    """
    try:
        config = EmulatorConfig.model_validate(yaml.safe_load(config_path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        logger.error("cannot load emulator config %s: %s", config_path, exc)
        return 2
    try:
        emulator = Emulator(config, data_dir)
    except (OSError, ValueError) as exc:  # e.g. a configured port is taken, or the data dir is unusable
        logger.error("cannot start the emulator: %s", exc)
        return 1

    signals_seen: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        logger.info("received signal %d, stopping", signum)
        signals_seen.append(signum)
        if len(signals_seen) == 1:
            emulator.request_stop()
        else:
            emulator.force_stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    watcher = OutageFile(outages, emulator.set_outage) if outages is not None else None
    try:
        if ready_file is not None:
            write_ready_file(ready_file, emulator.ready_document())
        if watcher is not None:
            watcher.start()
        emulator.run()
    finally:
        if watcher is not None:
            watcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
