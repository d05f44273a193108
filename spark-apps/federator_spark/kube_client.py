"""The driver's own reads of the Kubernetes API: a list and a watch, nothing else, so the standard
library does (the Spark image installs no Kubernetes client). In a pod it reaches the API server as
in-cluster clients do: ``KUBERNETES_SERVICE_HOST``/``_PORT``, the ServiceAccount's token, CA and
namespace under ``/var/run/secrets/kubernetes.io/serviceaccount``.

The token file is read again for every request: the kubelet rotates a projected token by replacing the
file, and a request is made every few minutes at most (a list, then one watch until its timeout), so
reading it each time always sends the current token at no cost worth caching away. The token never
appears in an error or a log line.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
USER_AGENT = "federator-spark"


class ApiError(Exception):
    """The API server answered with an error, or not at all; ``status``: its HTTP status (None: none)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Expired(ApiError):
    """410 Gone: the resourceVersion a watch asked for is older than the server keeps; list again."""


class NotInCluster(RuntimeError):
    """No in-cluster configuration: not running in a pod (or its ServiceAccount is not mounted)."""


@dataclass(frozen=True)
class ApiAccess:
    """Where the API server is and how to authenticate: ``url`` (https in a pod; the tests' server is
    plain http), the token and CA files (None: none), and the pod's own namespace."""

    url: str
    token_file: Path | None = None
    ca_file: Path | None = None
    namespace: str = "default"

    @classmethod
    def in_cluster(
        cls, environ: Mapping[str, str] = os.environ, account: Path = SERVICE_ACCOUNT
    ) -> ApiAccess:
        host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise NotInCluster(
                "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: --task-configmaps reads "
                "the task ConfigMaps through the API server of the cluster the driver's pod runs in"
            )
        try:
            namespace = (account / "namespace").read_text(encoding="utf-8").strip()
        except OSError as error:
            raise NotInCluster(f"the pod's ServiceAccount is not mounted: {error}") from None
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        return cls(f"https://{host}:{port}", account / "token", account / "ca.crt", namespace)

    def token(self) -> str | None:
        if self.token_file is None:
            return None
        return self.token_file.read_text(encoding="utf-8").strip() or None

    def open(
        self, path: str, params: Mapping[str, str], timeout: float
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """GET ``path?params``; the open connection and its 200 response (else :class:`ApiError`)."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        token = self.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        connection = self._connection(timeout)
        try:
            connection.request("GET", f"{path}?{urlencode(params)}", headers=headers)
            response = connection.getresponse()
            if response.status != 200:
                raise failure(response.status, response.read())
        except BaseException:
            connection.close()
            raise
        return connection, response

    def get_json(self, path: str, params: Mapping[str, str], timeout: float) -> dict[str, Any]:
        connection, response = self.open(path, params, timeout)
        try:
            document: dict[str, Any] = json.loads(response.read())
        finally:
            connection.close()
        return document

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        host, port = parts.hostname or "", parts.port
        if parts.scheme != "https":
            return http.client.HTTPConnection(host, port, timeout=timeout)
        context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)


def failure(status: int, body: bytes) -> ApiError:
    """The error an API answer stands for, in the API's words (its Status message)."""
    try:
        document = json.loads(body)
        message = document.get("message") if isinstance(document, dict) else None
    except ValueError:
        message = None
    text = f"HTTP {status}: {message or body[:200].decode('utf-8', 'replace').strip()}"
    return Expired(text, status) if status == 410 else ApiError(text, status)


class WatchStream:
    """One watch request's events, one JSON object per line, until the server ends the stream (its
    ``timeoutSeconds``) or :meth:`interrupt` cuts it."""

    def __init__(self, access: ApiAccess, path: str, params: Mapping[str, str], timeout: float) -> None:
        self.connection, self.response = access.open(path, {**params, "watch": "true"}, timeout)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            line = self.response.readline()
            if not line:
                return
            if line.strip():
                event: dict[str, Any] = json.loads(line)
                yield event

    def interrupt(self) -> None:
        """Wake the thread reading the stream (from any other thread): its read ends."""
        sock = self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Called by the reading thread, once done (closing under a reader breaks http.client)."""
        self.connection.close()
