"""The wrong places an on-call engineer's kubeconfig can point at: an API server that accepts connections
and never answers, a web server that is no API server, a cluster without Federator's CRDs."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme
import yaml

from support.kube import KubeServer


def kubeconfig_for(path: Path, server: str, token: str | None = "t", **cluster: object) -> Path:
    """A kubeconfig whose one context `x` (namespace default) reaches `server`."""
    path.write_text(
        yaml.safe_dump(
            {
                "current-context": "x",
                "clusters": [{"name": "x", "cluster": {"server": server, **cluster}}],
                "users": [{"name": "x", "user": {"token": token} if token else {}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x", "namespace": "default"}}],
            }
        )
    )
    return path


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts connections (the kernel does, from the backlog) and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


class WebPage(ThreadingHTTPServer):
    """A web server answering every request with an HTML page (a kubeconfig pointing at the wrong port);
    it keeps the headers of each request."""

    def __init__(self, ca: trustme.CA | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Page)
        self.seen: list[Message] = []
        self.scheme = "http"
        if ca is not None:  # HTTPS with a certificate for 127.0.0.1 from the test's own CA
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ca.issue_cert("127.0.0.1").configure_cert(context)
            self.socket = context.wrap_socket(self.socket, server_side=True)
            self.scheme = "https"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}"


class _Page(BaseHTTPRequestHandler):
    server: WebPage

    def do_GET(self) -> None:
        self.server.seen.append(self.headers)
        body = b"<html><body>Welcome to nginx!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def web_page_server(ca: trustme.CA | None = None) -> Iterator[WebPage]:
    server = WebPage(ca)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def uninstall_federator(kube: KubeServer) -> None:
    """The API server keeps its built-in kinds only: Federator's CRDs are not installed."""

    def forget() -> None:
        for resource in [r for r in kube.emulator.resources if r.group == "federator.io"]:
            del kube.emulator.resources[resource]

    kube.call(forget)
