"""The operator's and the plugin's Kubernetes API client: kubernetes_asyncio's `ApiClient` (requests,
errors) and `watch.Watch` (watch streams), over an HTTP session opened from kopf's ConnectionInfo so
that the operator and kopf authenticate the same way (kubeconfig or in-cluster service account).

Objects stay plain dicts, as kopf hands them: the generated models would cost a conversion both ways on
every read of a thousand tasks' children, and nothing here needs them. Children are written with
server-side apply under one field manager (`FIELD_MANAGER`, apply/children.py)."""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Any

import aiohttp
import kopf
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.watch import Watch

from federator.kube.verdicts import VERDICTS
from federator.recent import Recent

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
FIELD_MANAGER = "federator"
"""The one field manager of everything the operator applies (metadata.managedFields)."""

_OBJECT = {200: "object", 201: "object", 202: "object"}
_WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30)
_READ_BUFFER = 2**21  # a watch event is one line, and a ConfigMap may be up to 1 MiB (etcd's limit: 1.5)


class ApiError(Exception):
    """A refused request, with the API server's status code, message and the Status's `details.causes`
    (e.g. each field of a server-side apply conflict)."""

    def __init__(self, status: int, message: str, causes: tuple[Mapping[str, Any], ...] = ()) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.causes = causes

    @classmethod
    def of(cls, err: ApiException) -> ApiError:
        return cls.answered(int(err.status or 0), err.body if isinstance(err.body, str) else "", err.reason)

    @classmethod
    def answered(cls, status: int, text: str, reason: object) -> ApiError:
        """From an error response's body: a Status object, or text from something else."""
        try:
            payload = json.loads(text)
        except ValueError:
            return cls(status, text.strip()[:500] or str(reason))
        if not isinstance(payload, dict):
            return cls(status, str(reason))
        causes = (payload.get("details") or {}).get("causes") or ()
        return cls(status, str(payload.get("message") or reason), tuple(causes))


class KubeClient:
    # A served resource stays served for as long as its operator is installed: a minute's cache spares
    # every reconciliation pass a discovery request. "Not served" is never cached, so installing the
    # operator is noticed at the next retry. Passes asking while a discovery request is out share its
    # answer: a thousand daemons whose cache expired together ask once, not once each.
    DISCOVERY_TTL_SECONDS = 60.0

    def __init__(self, server: str, session: aiohttp.ClientSession) -> None:
        self._session = session
        self._api = _api_client(server, session)
        self._served: Recent[tuple[str, str], bool] = Recent(self.DISCOVERY_TTL_SECONDS, keep=bool)

    @classmethod
    def from_connection_info(
        cls, info: kopf.ConnectionInfo, user_agent: str = "federator-operator"
    ) -> KubeClient:
        return cls(info.server, open_session(info, user_agent))

    async def close(self) -> None:
        await self._api.close()

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
        response: aiohttp.ClientResponse = await self._api.call_api(
            path,
            "GET",
            header_params={"Accept": "*/*"},
            _preload_content=False,
            _request_timeout=self._timeout,
        )
        async with response:
            if response.status == 404:
                return None
            text = await response.text(errors="replace")
            if response.status >= 400:
                raise ApiError.answered(response.status, text, response.reason)
            return text

    async def watch(
        self, path: str, *, label_selector: str, resource_version: str, timeout_seconds: int
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The events of one watch request (kubernetes_asyncio's `Watch`, bookmarks asked for) as
        `{type, object}`, until the server ends it after `timeout_seconds`. An ERROR event (e.g. 410 Gone)
        is raised as ApiError."""
        stream = _Watch(self._api)
        async with stream:
            try:
                async for event in stream.stream(
                    self._watch_request,
                    path,
                    label_selector=label_selector,
                    resource_version=resource_version,
                    timeout_seconds=timeout_seconds,  # given: `Watch` then makes one request, no more
                    allow_watch_bookmarks=True,
                ):
                    yield {"type": event["type"], "object": event["raw_object"]}
            except ApiException as err:
                raise ApiError.of(err) from None

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._request("POST", path, body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> dict[str, Any]:
        return await self._request("PATCH", path, body, content_type)

    async def apply(
        self, path: str, body: dict[str, Any], force: bool = False
    ) -> tuple[bool, dict[str, Any]]:
        """Server-side apply of `body` (the fields Federator has an opinion on) as `FIELD_MANAGER`, creating
        the object when missing: (whether it was created, the object as stored). Without `force`, a field
        another manager holds with another value is a 409 whose `causes` name each field and manager.
        `body` is kept by reference with the drift verdict about what was stored: never modify it after."""
        query = [("fieldManager", FIELD_MANAGER), *([("force", "true")] if force else [])]
        status, stored = await self._send("PATCH", path, body, APPLY_PATCH, query)
        VERDICTS.applied(body, stored)  # the next pass finds this version as applied, without a walk
        return status == 201, stored

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
        return await self._served.get((api_version, plural), lambda: self._discover(api_version, plural))

    async def _discover(self, api_version: str, plural: str) -> bool:
        listing = await self.get(f"/apis/{api_version}")
        return any(r.get("name") == plural for r in (listing or {}).get("resources", []))

    @property
    def _timeout(self) -> aiohttp.ClientTimeout:
        # kubernetes_asyncio passes a timeout with every request (none unless told): the session's.
        return self._session.timeout

    async def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> dict[str, Any]:
        return (await self._send(method, path, body, content_type))[1]

    async def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        query: Iterable[tuple[str, str]] = (),
    ) -> tuple[int, dict[str, Any]]:
        """(status code, the JSON object answered; {} for none)."""
        try:
            found, status, _ = await self._api.call_api(
                path,
                method,
                query_params=list(query),
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                response_types_map=_OBJECT,
                _request_timeout=self._timeout,
            )
        except ApiException as err:
            raise ApiError.of(err) from None
        if found is None or found == "":
            return status, {}
        if not isinstance(found, dict):  # not JSON: something else answers there
            raise ValueError(f"{method} {path} answered with something that is not a JSON object")
        return status, found

    async def _watch_request(self, path: str, **params: Any) -> aiohttp.ClientResponse:
        """One watch request, its body unread, for `Watch` to read line by line. (No `:rtype:` in this
        docstring: `Watch` then hands the objects over as the dicts they are.)"""
        params.pop("_preload_content", None)
        query = [(_camel(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in params.items()]
        response: aiohttp.ClientResponse = await self._api.call_api(
            path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            _preload_content=False,
            _request_timeout=_WATCH_TIMEOUT,
        )
        return response


class _Watch(Watch):
    """`Watch` over the client's `ApiClient`. kubernetes_asyncio's builds an `ApiClient` of its own for
    every watch request, loading the CA store each time (about 25 ms of CPU), and closes it at the end:
    this one borrows the client's (used only to decode typed events, which these are not) and leaves it
    open."""

    def __init__(self, api: ApiClient) -> None:  # not super().__init__(): it builds the ApiClient
        self._raw_return_type = None
        self._stop = False
        self._api_client = api
        self.resource_version = None
        self.resp = None

    async def close(self) -> None:
        if self.resp is not None:
            self.resp.release()
            self.resp = None


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


class _JsonApiClient(ApiClient):
    """`ApiClient` for what is JSON already. Its `sanitize_for_serialization` turns generated models into
    dicts by walking and copying every body, header and query before it is sent: bodies here are plain
    dicts, so that walk was a copy of each child applied (about 0.1 ms a Spark application) for nothing."""

    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj


def _api_client(server: str, session: aiohttp.ClientSession) -> ApiClient:
    api = _JsonApiClient(Configuration(host=server.rstrip("/")))
    # ApiClient opens a session of its own; requests go through `session` instead, which carries kopf's
    # credentials and TLS (inline PEM data, repeated Impersonate-Group headers: more than a Configuration
    # can say). `detach` leaves the unused one closed without a request.
    api.rest_client.pool_manager.detach()
    api.rest_client.pool_manager = session
    api.default_headers.pop("User-Agent", None)  # the session's names the client (RBAC tests match it)
    return api


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
        read_bufsize=_READ_BUFFER,
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
