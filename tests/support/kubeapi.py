"""A kmock ``KubernetesEmulator`` that behaves like a real API server where our tests depend on it.

kmock 0.8 stores objects as plain JSON and merges patches into them. That is enough to serve
requests, but not to keep a controller honest: kopf relies on ``resourceVersion`` for its JSON-patch
``test`` preconditions and its watch bookkeeping (plain kmock made create handlers run twice),
kubectl needs ``kind`` on lists and a JSON watch stream, and without status-subresource isolation a
test cannot catch "status written to the wrong endpoint". Each override below fixes one such gap;
docs/testing.md lists them, and the gaps that remain.

All writes are done here, under kmock's lock, and then the request is served by kmock's normal
dispatch (user reactions first, then the stored state), skipping the parent's own simplistic write.
Each write stores a new version built beside the stored one; a stored version is never changed in place,
so the write reads it without copying it and its watch event shares it.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import secrets
import string
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp.web
import attrs
import jsonpatch
import jsonpointer
import kmock
from kmock._internal import dicts, enums, references, rendering
from typing_extensions import override

from . import server_side_apply as ssa
from .field_sets import json_copy
from .resources import load_bundled
from .selectors import UnsupportedSelector, compile_selectors

Resource = references.resource
Obj = dict[str, Any]

_WRITES = {enums.action.CREATE, enums.action.UPDATE, enums.action.DELETE}
_JSON_PATCH = "application/json-patch+json"
_DICT_PATCHES = {"application/merge-patch+json"}
_APPLY = "application/apply-patch+yaml"
_STRATEGIC = "application/strategic-merge-patch+json"
# Set by the API server only; a patch or a create body cannot change them.
_SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "generation",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "name",
    "namespace",
)


def _builtin_resources() -> frozenset[Resource]:
    array = kmock.ResourcesArray()
    load_bundled(array)
    return frozenset(array)  # type: ignore[arg-type]  # it iterates resources; typed as keys


_BUILTIN = _builtin_resources()


def _error(status: int, reason: str, message: str) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=status, reason=reason, message=message, details={})


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _header(request: rendering.Request, name: str) -> str:
    return next((v for k, v in request.headers.items() if k.lower() == name), "")


def _content_type(request: rendering.Request) -> str:
    return _header(request, "content-type").split(";")[0].strip().lower()


@attrs.define(kw_only=True)
class FaithfulKubernetesEmulator(kmock.KubernetesEmulator):
    """kmock's emulator plus resourceVersion/uid/generation, status isolation and resumable watches."""

    _rv: int = attrs.field(default=0, init=False)
    # Each distinct request as (User-Agent, method, path, watch), for the RBAC check (support/rbac.py).
    requested: set[tuple[str, str, str, bool]] = attrs.field(factory=set, init=False)
    # How often each (method, path, watch) was requested, and the resourceVersion each watch of a path
    # started from: read through `times` and `watches` (kmock's own request log keeps the latest only).
    _request_counts: collections.Counter[tuple[str, str, bool]] = attrs.field(
        factory=collections.Counter, init=False
    )
    _watched_from: dict[str, list[str]] = attrs.field(factory=dict, init=False)
    # Every event ever emitted, as (resourceVersion, resource, event), so a watch can resume from N.
    _journal: list[tuple[int, Resource, Obj]] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        # kmock streams watches as application/octet-stream, which kubectl refuses ("no stream
        # serializers registered"). Re-register the watch reaction above the parent's, with a JSON type.
        (self.fallback**1)[enums.action.WATCH] << {"Content-Type": "application/json"} << self._serve_watch

    @override
    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        agent, method, path = raw_request.headers.get("User-Agent", ""), raw_request.method, raw_request.path
        watch = raw_request.query.get("watch") in ("true", "1")
        self.requested.add((agent, method, path, watch))
        self._request_counts[(method, path, watch)] += 1
        if watch:
            self._watched_from.setdefault(path, []).append(raw_request.query.get("resourceVersion", ""))
        # kmock cannot parse the cluster-wide namespace list (/api/v1/namespaces: "not enough values to
        # unpack"), and answered 500. A cluster answers what RBAC allows; the chart grants namespaced
        # Roles only, so the operator meets 403 there, and kopf falls back to the namespaces it was given.
        if raw_request.path.rstrip("/") == "/api/v1/namespaces":
            status = {
                "apiVersion": "v1",
                "kind": "Status",
                "status": "Failure",
                "reason": "Forbidden",
                "code": 403,
                "details": {"kind": "namespaces"},
                "message": 'namespaces is forbidden: cannot list resource "namespaces" in API group "" '
                "at the cluster scope",
            }
            return aiohttp.web.json_response(status, status=403)
        return await super().__call__(raw_request)

    def times(self, method: str, path: str, *, watch: bool = False) -> int:
        """How many requests `method path` (watches or not) the server has received: a test counts what a
        client did (a LIST, a renewed watch) instead of sleeping and hoping."""
        return self._request_counts.get((method.upper(), path, watch), 0)

    def watches(self, path: str) -> list[str]:
        """The resourceVersion each watch of `path` asked to start from, in order ("": the current state)."""
        return list(self._watched_from.get(path, ()))

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out (like etcd's revision: one counter for everything)."""
        return self._rv

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    async def _emit(self, resource: Resource, kind: str, obj: Obj) -> None:
        # A stored version is never changed in place (every write stores a new one, made from a copy): the
        # event shares it, as every watcher shares the event.
        event = {"type": kind, "object": obj}
        self._journal.append((int(obj["metadata"]["resourceVersion"]), resource, event))
        await self._buses[resource].put(event)

    def _info(self, resource: Resource) -> kmock.ResourceInfo | None:
        """The declared resource's info. A request's resource is already parsed: looked up directly, as
        kmock's ``resource in array`` first checks the key against a runtime Protocol (a tenth of this
        server's CPU in bench.operator_scale: every write asks twice)."""
        return self._resources._resources.get(resource)

    def _has_status(self, resource: Resource) -> bool:
        info = self._info(resource)
        return info is not None and "status" in info.subresources

    def _cluster_scoped(self, resource: Resource) -> bool:
        info = self._info(resource)
        return info is not None and info.namespaced is False

    def _stored(self, request: rendering.Request) -> kmock.Object:
        assert request.resource is not None and request.name is not None
        key = (request.resource, request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            raise kmock.KubernetesObjectNotFoundError()
        return self._objects[key]

    # -- writes ---------------------------------------------------------------------------------------

    # kmock matches each request against its reactions by scanning its whole request log, which makes a
    # long run quadratic (a 200-task benchmark spent 95% of the server's time there). Tests only look at
    # recent requests, so older ones are forgotten.
    REQUEST_LOG_LIMIT = 50

    @override
    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        log = self._requests
        if len(log) > self.REQUEST_LOG_LIMIT:
            del log[: len(log) - self.REQUEST_LOG_LIMIT]
        if request.resource is None or request.action not in _WRITES:
            return await super()._handle(request)
        applying = request.action == enums.action.UPDATE and _content_type(request) == _APPLY
        if request.data is None and request.action != enums.action.DELETE and not applying:
            raise _error(400, "BadRequest", "the request body is not valid JSON")
        created = False
        async with self._lock:
            if applying:
                created = await self._server_side_apply(request)
            elif request.action == enums.action.CREATE:
                await self._create(request)
            elif request.action == enums.action.UPDATE and request.name is not None:
                await self._update(request)
            elif request.action == enums.action.DELETE and request.name is not None:
                await self._delete(request)
        # Serve the response the kmock way (user reactions, else the stored object), minus its write.
        response = await kmock.KubernetesScaffold._handle(self, request)
        if created:  # an apply that creates answers 201, and needs RBAC's "create" as well as "patch"
            agent = _header(request, "user-agent")
            self.requested.add((agent, "POST", request.url.path.rsplit("/", 1)[0], False))
            if not response.prepared and response.status == 200:
                response.set_status(201)
        return response

    def _assign_name(self, resource: Resource, namespace: str | None, meta: Obj) -> None:
        """``generateName``: kmock stored such objects under the name None (kopf's Events use it)."""
        if meta.get("name") or not meta.get("generateName"):
            return
        alphabet = string.ascii_lowercase + string.digits
        while True:
            name = meta["generateName"] + "".join(secrets.choice(alphabet) for _ in range(5))
            key = (resource, namespace, name)
            if key not in self._objects or self._objects[key].deleted:
                meta["name"] = name
                return

    async def _create(self, request: rendering.Request) -> None:
        """POST: server-owned metadata is set here, and ``.status`` is dropped if it is a subresource."""
        assert request.resource is not None
        obj: Obj = request.data  # mutated in place: kmock's response lookup reads the name from it
        if not isinstance(obj, dict):
            raise _error(400, "BadRequest", "the object must be a JSON object")
        meta: Obj = obj.setdefault("metadata", {})
        cluster_scoped = self._cluster_scoped(request.resource)
        namespace = None if cluster_scoped else request.namespace or meta.get("namespace")
        self._assign_name(request.resource, namespace, meta)
        if not meta.get("name"):
            raise _error(422, "Invalid", "metadata.name or metadata.generateName is required")
        key = (request.resource, namespace, meta["name"])
        if key in self._objects and not self._objects[key].deleted:
            raise _error(409, "AlreadyExists", f"{request.resource.plural} {meta['name']!r} already exists")
        for field in _SYSTEM_FIELDS[:6]:
            meta.pop(field, None)
        meta.pop("namespace", None)
        if namespace is not None:
            meta["namespace"] = namespace
        if self._has_status(request.resource):
            obj.pop("status", None)
        obj.update(ssa.update(None, obj, self._writer(request)))
        await self._store_new(request.resource, key, obj)

    async def _store_new(self, resource: Resource, key: tuple[Resource, str | None, str], obj: Obj) -> None:
        obj["metadata"].update(
            uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1, resourceVersion=self._next_rv()
        )
        if key in self._objects:
            self._objects[key].create(obj)
        else:
            self._objects[key] = obj
        await self._emit(resource, "ADDED", obj)

    def _patch_body(self, request: rendering.Request) -> Any:
        """Honour Content-Type like the API server: kmock applied any body by its JSON shape."""
        assert request.resource is not None
        ctype, body = _content_type(request), request.data
        if ctype == _STRATEGIC and request.resource not in _BUILTIN:
            raise _error(
                415, "UnsupportedMediaType", "strategic merge patch is not supported for custom resources"
            )
        if ctype == _JSON_PATCH and isinstance(body, list):
            return body
        if (ctype in _DICT_PATCHES or ctype == _STRATEGIC) and isinstance(body, dict):
            return body  # NB: a strategic merge patch is merged as a JSON merge patch (a known gap)
        if ctype not in _DICT_PATCHES | {_JSON_PATCH, _STRATEGIC}:
            raise _error(415, "UnsupportedMediaType", f"the patch content type {ctype!r} is not supported")
        raise _error(400, "BadRequest", f"a {ctype} body cannot be a {type(body).__name__}")

    @staticmethod
    def _precondition(old: Obj, body: Any) -> None:
        """A ``metadata.resourceVersion`` in a merge patch or an apply must be the stored one: else 409."""
        wanted = body.get("metadata", {}).get("resourceVersion") if isinstance(body, dict) else None
        if wanted is not None and wanted != old["metadata"]["resourceVersion"]:
            raise _error(
                409,
                "Conflict",
                "the object has been modified; please apply your changes to the latest version and try again",
            )

    def _apply_patch(self, old: Obj, patch: Any) -> Obj:
        """Apply a patch: a failed JSON-patch ``test`` is 422, a stale ``resourceVersion`` 409, never 500."""
        self._precondition(old, patch)
        try:
            return json_copy(dict(dicts.patch_dict(old, patch)))  # neither patch kind changes `old`
        except jsonpatch.JsonPatchTestFailed as e:
            raise _error(422, "Invalid", f"the JSON patch test operation failed: {e}") from e
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, ValueError, TypeError) as e:
            raise _error(422, "Invalid", f"the patch cannot be applied: {e}") from e

    def _isolate_status(self, request: rendering.Request, old: Obj, new: Obj) -> Obj:
        """With a status subresource: the main endpoint keeps the old .status; /status changes only it."""
        assert request.resource is not None
        if not self._has_status(request.resource):
            return new
        if request.subresource == "status":
            result = json_copy(old)
            source = new
        else:
            result = new
            source = old
        result.pop("status", None)
        if "status" in source:
            result["status"] = source["status"]
        return result

    @staticmethod
    def _keep_system_fields(old: Obj, new: Obj) -> None:
        for field in _SYSTEM_FIELDS:
            new["metadata"].pop(field, None)
            if field in old["metadata"]:
                new["metadata"][field] = old["metadata"][field]

    def _stamp(self, request: rendering.Request, old: Obj, new: Obj) -> None:
        """Bump ``generation`` when anything but metadata (and a subresource's status) changed; new rv."""
        assert request.resource is not None
        ignored = {"metadata", "status"} if self._has_status(request.resource) else {"metadata"}

        def content(obj: Obj) -> Obj:
            return {k: v for k, v in obj.items() if k not in ignored}

        if content(old) != content(new):
            new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
        new["metadata"]["resourceVersion"] = self._next_rv()

    async def _update(self, request: rendering.Request) -> None:
        """PATCH. A no-op patch writes nothing (same rv, no event), as on a real server."""
        if request.params.get("force") is not None:
            raise _error(422, "Invalid", "force: Forbidden: may not be specified for non-apply patch")
        stored = self._stored(request)
        old = stored.raw  # read, never changed: the new version is built from a copy (`_apply_patch`)
        new = self._isolate_status(request, old, self._apply_patch(old, self._patch_body(request)))
        new.setdefault("metadata", {})
        self._keep_system_fields(old, new)
        await self._store_update(request, stored, old, ssa.update(old, new, self._writer(request)))

    async def _store_update(
        self, request: rendering.Request, stored: kmock.Object, old: Obj, new: Obj
    ) -> None:
        assert request.resource is not None
        if new == old:
            return
        self._stamp(request, old, new)
        stored.history.append(new)
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            stored.delete()  # the last finalizer is gone: watchers see only DELETED, like on a real server
            await self._emit(request.resource, "DELETED", new)
        else:
            await self._emit(request.resource, "MODIFIED", new)

    # -- server-side apply (support/server_side_apply.py) --------------------------------------------

    def _writer(self, request: rendering.Request) -> ssa.Write:
        """Who writes: ``?fieldManager=``, else the User-Agent's product name, as the API server does."""
        assert request.resource is not None
        manager = request.params.get("fieldManager") or _header(request, "user-agent").split("/")[0]
        if len(manager) > 128 or not manager.isprintable():
            raise _error(
                422, "Invalid", "fieldManager: Invalid value: must be at most 128 printable characters"
            )
        group, version = request.resource.group, request.resource.version
        subresource = request.subresource or ""
        ignored = ssa.ignored_fields(self._has_status(request.resource), subresource)
        api_version = f"{group}/{version}" if group else str(version)
        return ssa.Write(manager, api_version, _now(), subresource, ignored)

    def _applied(self, request: rendering.Request, write: ssa.Write) -> Obj:
        """The body of an apply patch (YAML or JSON), checked as the API server checks it."""
        assert request.resource is not None
        kind = self._resources[request.resource].kind if request.resource in self._resources else None
        try:
            return ssa.applied_object(
                request.params.get("fieldManager"), request.text, write, kind, request.name
            )
        except ssa.InvalidApply as e:
            raise _error(e.code, "Invalid" if e.code == 422 else "BadRequest", str(e)) from e

    async def _server_side_apply(self, request: rendering.Request) -> bool:
        """PATCH with ``application/apply-patch+yaml``; creates a missing object (True when it did)."""
        assert request.resource is not None and request.name is not None
        write = self._writer(request)
        # The API server parses it as Go's ParseBool does (the Python client sends "True").
        force = request.params.get("force", "").lower() in ("true", "t", "1")
        applied = self._applied(request, write)
        namespace = None if self._cluster_scoped(request.resource) else request.namespace
        key = (request.resource, namespace, request.name)
        if key in self._objects and not self._objects[key].deleted:
            stored = self._objects[key]
            old = stored.raw  # read, never changed: `ssa.apply` builds the new version beside it
            self._precondition(old, applied)
            new = self._applied_to(request, old, applied, write, force)
            self._keep_system_fields(old, new)
            await self._store_update(request, stored, old, new)
            return False
        if request.subresource:
            raise kmock.KubernetesObjectNotFoundError()
        meta = {"name": request.name} if namespace is None else {"name": request.name, "namespace": namespace}
        empty = {"apiVersion": applied["apiVersion"], "kind": applied.get("kind"), "metadata": meta}
        new = self._applied_to(request, empty, applied, write, force)
        self._keep_system_fields(empty, new)
        await self._store_new(request.resource, key, new)
        return True

    def _applied_to(
        self, request: rendering.Request, old: Obj, applied: Obj, write: ssa.Write, force: bool
    ) -> Obj:
        """The apply's result, status isolated; a conflict is the API server's 409 with its causes."""
        try:
            merged = ssa.apply(old, applied, write, force=force)
        except ssa.ApplyConflict as e:
            raise kmock.KubernetesError(
                status=409, reason="Conflict", message=e.message(), details={"causes": e.causes()}
            ) from e
        managed = merged.get("metadata", {}).get("managedFields")
        new = self._isolate_status(request, old, merged)  # from /status: the old object, new status
        new.setdefault("metadata", {}).pop("managedFields", None)
        if managed:
            new["metadata"]["managedFields"] = managed
        return new

    async def _delete(self, request: rendering.Request) -> None:
        """DELETE. With finalizers it only sets deletionTimestamp (and bumps generation, rv); else deletes."""
        assert request.resource is not None
        stored = self._stored(request)
        obj = json_copy(stored.raw)
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return
        meta["resourceVersion"] = self._next_rv()
        if meta.get("finalizers"):
            meta.update(
                deletionTimestamp=_now(),
                deletionGracePeriodSeconds=0,
                generation=meta.get("generation", 0) + 1,
            )
            stored.history.append(obj)
            await self._emit(request.resource, "MODIFIED", obj)
        else:
            stored.history.append(obj)
            stored.delete()
            await self._emit(request.resource, "DELETED", obj)

    # -- reads ----------------------------------------------------------------------------------------

    def _select(self, request: rendering.Request) -> list[Obj]:
        """Live objects of the request's resource, namespace (None = all) and selectors, in key order."""
        try:
            matches = compile_selectors(request.params)
        except UnsupportedSelector as e:
            raise _error(400, "BadRequest", str(e)) from e
        found = [
            (namespace or "", name, obj.raw)
            for (resource, namespace, name), obj in self._objects.items()
            if resource == request.resource
            and not obj.deleted
            and request.namespace in (None, namespace)
            and request.name in (None, name)
            and matches(obj.raw)
        ]
        return [json_copy(raw) for _, _, raw in sorted(found, key=lambda t: t[:2])]

    def _list_kind(self, resource: Resource) -> tuple[str, str]:
        info = self._resources[resource] if resource in self._resources else kmock.ResourceInfo()
        api_version = resource.version if resource.group == "" else f"{resource.group}/{resource.version}"
        return str(api_version), f"{info.kind or str(resource.plural).capitalize()}List"

    @override
    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        """LIST with ``kind``/``apiVersion`` (kubectl needs them) and the current resourceVersion."""
        assert request.resource is not None
        if request.resource not in self._get_resources():
            raise kmock.KubernetesResourceNotFoundError()
        async with self._lock:
            items, rv = self._select(request), str(self._rv)
        api_version, kind = self._list_kind(request.resource)
        return {"apiVersion": api_version, "kind": kind, "metadata": {"resourceVersion": rv}, "items": items}

    def _backlog(self, request: rendering.Request) -> list[Obj]:
        """What a watch sends first: the current state, or every event after ``resourceVersion=N``."""
        since = request.params.get("resourceVersion", "")
        if since in ("", "0") or request.params.get("sendInitialEvents") == "true":
            return [{"type": "ADDED", "object": obj} for obj in self._select(request)]
        if not since.isdigit():
            raise _error(400, "BadRequest", f"invalid resourceVersion {since!r}")
        matches = compile_selectors(request.params)
        return [
            event
            for rv, resource, event in self._journal
            if rv > int(since)
            and resource == request.resource
            and self._watched(request, event)
            and matches(event["object"])
        ]

    @staticmethod
    def _watched(request: rendering.Request, event: Obj) -> bool:
        meta = event["object"].get("metadata", {})
        return request.namespace in (None, meta.get("namespace")) and request.name in (None, meta.get("name"))

    def _bookmark(self, request: rendering.Request) -> Obj | None:
        """The WatchList end marker (kubectl 1.37's ``wait`` waits for it); only when asked for."""
        if request.params.get("sendInitialEvents") != "true":
            return None
        api_version, kind = self._list_kind(request.resource)  # type: ignore[arg-type]
        meta = {"resourceVersion": str(self._rv), "annotations": {"k8s.io/initial-events-end": "true"}}
        obj = {"apiVersion": api_version, "kind": kind.removesuffix("List"), "metadata": meta}
        return {"type": "BOOKMARK", "object": obj}

    @override
    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        """WATCH: backlog and live subscription are taken atomically, so no write falls in between."""
        assert request.resource is not None
        yield b""  # send the headers now, as kmock does
        selected = compile_selectors(request.params)
        bus = self._buses[request.resource]
        async with self._lock:
            backlog, bookmark = self._backlog(request), self._bookmark(request)
            mark = await bus.mark()
        timeout = float(request.params.get("timeoutSeconds", 0)) or None
        try:
            for event in backlog:
                yield event
            if bookmark is not None:
                yield bookmark
            async with asyncio.timeout(timeout):
                async for event in bus.stream(since=mark):
                    if self._watched(request, event) and selected(event["object"]):
                        yield event
        except TimeoutError:
            return  # timeoutSeconds elapsed: the server ends the stream and the client re-watches
        finally:
            await bus.unmark(mark)

    @override
    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        """kmock says ``reason: Object Not Found``; clients and kubectl expect the API's ``NotFound``."""
        if isinstance(exc, kmock.KubernetesNotFoundError):
            exc = _error(404, "NotFound", exc.message or "not found")
        return await super()._render_error(exc)

    @override
    async def _serve_version(self, request: rendering.Request) -> rendering.Payload:
        """Discovery fixes: core is ``v1`` (not ``/v1``); subresources get no shortNames (kubectl warned)."""
        payload: Obj = await super()._serve_version(request)  # type: ignore[assignment]
        payload["groupVersion"] = payload["groupVersion"].lstrip("/")
        for entry in payload["resources"]:
            if "/" in entry["name"]:
                entry.update(shortNames=[], categories=[], verbs=["get", "patch", "update"])
        return payload
