"""A thin async REST client for the Kubernetes API, built from kopf's ConnectionInfo so the operator
and kopf authenticate the same way (kubeconfig or in-cluster service account)."""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import time
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import kopf

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """A refused request, with the API server's status code and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True)
class ResourceRef:
    api_version: str
    plural: str

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        parts = [base]
        if namespace is not None:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


CONFIGMAPS = ResourceRef("v1", "configmaps")
SECRETS = ResourceRef("v1", "secrets")
SERVICE_ACCOUNTS = ResourceRef("v1", "serviceaccounts")
PERSISTENT_VOLUME_CLAIMS = ResourceRef("v1", "persistentvolumeclaims")


class KubeClient:
    # A served resource stays served for as long as its operator is installed: a minute's cache spares
    # every reconciliation pass a discovery request. "Not served" is never cached, so installing the
    # operator is noticed at the next retry.
    DISCOVERY_TTL_SECONDS = 60.0

    def __init__(self, server: str, session: aiohttp.ClientSession) -> None:
        self._server = server.rstrip("/")
        self._session = session
        self._served: dict[tuple[str, str], float] = {}

    @classmethod
    def from_connection_info(
        cls, info: kopf.ConnectionInfo, user_agent: str = "federator-operator"
    ) -> KubeClient:
        return cls(info.server, open_session(info, user_agent))

    async def close(self) -> None:
        await self._session.close()

    @property
    def closed(self) -> bool:
        return self._session.closed

    async def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return await self._request("GET", path)
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def get_text(self, path: str) -> str | None:
        """A plain-text resource (a pod's log, a proxied /metrics), or None when it does not exist."""
        async with self._session.get(self._server + path, headers={"Accept": "*/*"}) as response:
            if response.status == 404:
                return None
            text = await response.text(errors="replace")
            if response.status >= 400:
                raise ApiError(response.status, _message(text) or str(response.reason))
            return text

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        """The events of a watch (`?watch=true`), one JSON object per line, until the server ends it.
        Lines are split here rather than by aiohttp's readline, whose line limit (64 KiB) a large
        ConfigMap would pass."""
        query = {**params, "watch": "true"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        async with self._session.get(self._server + path, params=query, timeout=timeout) as response:
            if response.status >= 400:
                text = await response.text(errors="replace")
                raise ApiError(response.status, _message(text) or str(response.reason))
            pending = b""
            async for chunk in response.content.iter_any():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
            if pending.strip():
                yield json.loads(pending)

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._request("POST", path, body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> dict[str, Any]:
        return await self._request("PATCH", path, body, content_type)

    async def delete(self, path: str) -> bool:
        """True if something was deleted; False if it was already gone."""
        try:
            await self._request("DELETE", path)
        except ApiError as err:
            if err.status == 404:
                return False
            raise
        return True

    async def serves(self, api_version: str, plural: str) -> bool:
        """Whether the cluster serves the resource (e.g. a Spark operator's CRD is installed)."""
        since = self._served.get((api_version, plural))
        if since is not None and time.monotonic() - since < self.DISCOVERY_TTL_SECONDS:
            return True
        try:
            listing = await self._request("GET", f"/apis/{api_version}")
            served = any(r.get("name") == plural for r in listing.get("resources", []))
        except ApiError as err:
            if err.status != 404:
                raise
            served = False
        if served:
            self._served[(api_version, plural)] = time.monotonic()
        return served

    async def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> dict[str, Any]:
        headers = {"Content-Type": content_type} if body is not None else {}
        async with self._session.request(method, self._server + path, json=body, headers=headers) as response:
            payload = await response.json(content_type=None) if response.content_length != 0 else {}
            if response.status >= 400:
                message = (
                    payload.get("message", response.reason) if isinstance(payload, dict) else response.reason
                )
                raise ApiError(response.status, str(message))
            return payload if isinstance(payload, dict) else {}


def _message(text: str) -> str:
    try:
        payload = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    return str(payload.get("message", "")) if isinstance(payload, dict) else ""


def open_session(
    info: kopf.ConnectionInfo,
    user_agent: str,
    extra_headers: Iterable[tuple[str, str]] = (),
    timeout: float | None = 30,
) -> aiohttp.ClientSession:
    """An HTTP session with the connection's credentials and TLS; ``extra_headers`` may repeat a name
    (client-go sends one Impersonate-Group header per group). Raises OSError or ValueError for TLS
    settings that cannot be used."""
    headers = [("Accept", "application/json"), ("User-Agent", user_agent)]
    if info.token:
        headers.append(("Authorization", f"{info.scheme or 'Bearer'} {info.token}"))
    auth = aiohttp.BasicAuth(info.username, info.password or "") if info.username else None
    context: ssl.SSLContext | bool = _ssl_context(info) if info.server.startswith("https://") else False
    return aiohttp.ClientSession(
        headers=[*headers, *extra_headers],
        auth=auth,
        connector=aiohttp.TCPConnector(ssl=context),
        timeout=aiohttp.ClientTimeout(total=timeout),
    )


def _ssl_context(info: kopf.ConnectionInfo) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=info.ca_path)
    if info.ca_data:
        context.load_verify_locations(cadata=base64.b64decode(info.ca_data).decode())
    if info.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert = _as_file(info.certificate_path, info.certificate_data)
    key = _as_file(info.private_key_path, info.private_key_data)
    if cert:
        context.load_cert_chain(cert, key)
    return context


def _as_file(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | None, data: str | bytes | None
) -> str | None:
    # ssl wants files; kubeconfig may embed the PEM data instead.
    if path:
        return os.fsdecode(path)
    if not data:
        return None
    raw = data if isinstance(data, bytes) else base64.b64decode(data)
    handle = tempfile.NamedTemporaryFile(prefix="federator-", suffix=".pem", delete=False)  # noqa: SIM115
    with handle:
        handle.write(raw)
    return handle.name
