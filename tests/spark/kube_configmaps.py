"""The test API server (``support.kube``) as a shared driver meets it: ConfigMaps written as the operator
writes a member task's, a history of changes that can be compacted (a watch from before it gets 410
Gone), and a TCP proxy in front of it that a test can cut and restore on the same port: the API server
"goes down" for the clients behind it (their connections are dropped, new ones are closed as soon as
they are accepted) while the server itself, and its history, lives on."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs
from kmock._internal import rendering

from support.kube import FaithfulKubernetesEmulator, KubeServer, serving

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLICATION_LABEL = "federator.io/application"


@attrs.define(kw_only=True)
class CompactingEmulator(FaithfulKubernetesEmulator):
    """Keeps history from ``compacted`` on only (etcd compacts every 5 minutes): a watch from an older
    resourceVersion gets what the API server's watch cache answers, an ERROR event with a 410 Status."""

    compacted: int = 0

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        since = request.params.get("resourceVersion", "")
        if since.isdigit() and 0 < int(since) < self.compacted:
            yield b""
            message = f"too old resource version: {since} ({self.compacted})"
            status = {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"}
            yield {"type": "ERROR", "object": {**status, "message": message}}
            return
        async for item in super()._serve_watch(request):
            yield item


@contextlib.contextmanager
def cuttable_api() -> Iterator[tuple[KubeServer, CuttableProxy]]:
    """A :class:`CompactingEmulator` served, and a :class:`CuttableProxy` in front of it."""
    with serving(CompactingEmulator()) as server, CuttableProxy.before(server) as proxy:
        yield server, proxy


def configmap(name: str, data: dict[str, str], application: str = "orders") -> dict[str, Any]:
    labels = {APPLICATION_LABEL: application}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }


def put(api: KubeServer, name: str, raw: dict[str, Any] | str, application: str = "orders") -> None:
    text = raw if isinstance(raw, str) else json.dumps(raw)
    status, body = api.request("GET", f"{CONFIGMAPS}/{name}")
    if status == 404:
        status, body = api.request("POST", CONFIGMAPS, configmap(name, {"task.json": text}, application))
    else:
        patch = {"data": {"task.json": text}}
        status, body = api.request("PATCH", f"{CONFIGMAPS}/{name}", patch, "application/merge-patch+json")
    assert status in (200, 201), body


def remove(api: KubeServer, name: str) -> None:
    status, body = api.request("DELETE", f"{CONFIGMAPS}/{name}")
    assert status == 200, body


class CuttableProxy:
    @classmethod
    @contextlib.contextmanager
    def before(cls, server: KubeServer, tls: ssl.SSLContext | None = None) -> Iterator[CuttableProxy]:
        proxy = cls(int(server.url.rsplit(":", 1)[1]), tls)
        try:
            yield proxy
        finally:
            proxy.close()

    def __init__(self, target_port: int, tls: ssl.SSLContext | None = None) -> None:
        """``tls``: serve HTTPS with it (the API server of a cluster), forwarding plain HTTP."""
        self.target = ("127.0.0.1", target_port)
        self.tls = tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.up = threading.Event()
        self.up.set()
        self.heads: list[bytes] = []  # each connection's first bytes: its first request line and headers
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        threading.Thread(target=self._accept, name="api-proxy", daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Drop every connection; refuse new ones until :meth:`restore`."""
        self.up.clear()
        with self._lock:
            for sock in self._open:
                _close(sock)
            self._open.clear()

    def restore(self) -> None:
        self.up.set()

    def close(self) -> None:
        self.cut()
        _close(self.listener)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            if not self.up.is_set():
                _close(client)
                continue
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        try:
            if self.tls is not None:
                client = self.tls.wrap_socket(client, server_side=True)
            head = client.recv(65536)
            server = socket.create_connection(self.target)
            server.sendall(head)
        except OSError:
            _close(client)
            return
        self.heads.append(head)
        with self._lock:
            self._open.update((client, server))
        threading.Thread(target=_pump, args=(server, client), daemon=True).start()
        _pump(client, server)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
