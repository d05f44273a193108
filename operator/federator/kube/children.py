"""The operator's children as last seen, kept current by a watch: a pass reads its ConfigMap and its Spark
application here instead of asking the API server, so a pass with nothing to do costs no request.

One copy per resource and namespace (`Watched`), started on first use: LIST the objects that carry the
operator's label, then WATCH from the list's resourceVersion with kubernetes_asyncio's `Watch`
(kube/client.py). A watch the server ends is renewed from the last version seen (bookmarks included),
never with a second LIST; `410 Gone` (the server no longer has that version) lists again. While a watch
is down the copy may be behind: what the operator writes goes into it at once (`remember`), and an apply
made from a stale copy is a re-apply that changes nothing (apply/children.py). Where the LIST is refused
(RBAC), reads go to the API as before. A child that is gone is forgotten by the drift verdicts too
(kube/verdicts.py), so they stay as many as the children."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import urllib.parse
from typing import Any, Protocol

from federator.kube.client import ApiError, KubeClient
from federator.kube.resources import ResourceRef
from federator.kube.verdicts import VERDICTS

log = logging.getLogger("federator.kube.children")
WATCH_SECONDS = 300
"""How long one watch request lasts before it is renewed (the API server's own cap is similar)."""
MAX_BACKOFF_SECONDS = 30.0


class ChildReader(Protocol):
    """Where a pass reads its children."""

    async def get(self, ref: ResourceRef, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def labelled(
        self, ref: ResourceRef, namespace: str, label: str, value: str
    ) -> list[dict[str, Any]]:
        """The children whose `label` is `value`."""
        ...

    def remember(self, ref: ResourceRef, stored: dict[str, Any]) -> None:
        """Note an object as the API server returned it after a write."""
        ...


class DirectChildren:
    """Every read asks the API server (callers without watches: tests, one-off tools)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def get(self, ref: ResourceRef, namespace: str, name: str) -> dict[str, Any] | None:
        return await self._client.get(ref.path(namespace, name))

    async def labelled(
        self, ref: ResourceRef, namespace: str, label: str, value: str
    ) -> list[dict[str, Any]]:
        return await list_labelled(self._client, ref, namespace, f"{label}={value}")

    def remember(self, ref: ResourceRef, stored: dict[str, Any]) -> None:
        return None


class Watched:
    """The labelled objects of one resource in one namespace. Objects handed out are shared: never
    modify them."""

    def __init__(self, client: KubeClient, ref: ResourceRef, namespace: str, selector: str) -> None:
        self._client = client
        self._path = ref.path(namespace)
        self._selector = selector
        self._objects: dict[str, dict[str, Any]] = {}
        self._version = ""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """The first LIST (raises ApiError when refused), then the watch in the background."""
        await self._list()
        self._task = asyncio.create_task(self._watch(), name=f"watching {self._path}")

    def get(self, name: str) -> dict[str, Any] | None:
        return self._objects.get(name)

    def labelled(self, label: str, value: str) -> list[dict[str, Any]]:
        return [o for o in self._objects.values() if (o["metadata"].get("labels") or {}).get(label) == value]

    def remember(self, stored: dict[str, Any]) -> None:
        name = stored["metadata"]["name"]
        known = self._objects.get(name)
        if _newer(stored, known):
            if known is not None and _uid(known) != _uid(stored):  # deleted and made again
                VERDICTS.forget(_uid(known))
            self._objects[name] = stored

    def __len__(self) -> int:
        return len(self._objects)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _list(self) -> None:
        query = urllib.parse.urlencode({"labelSelector": self._selector})
        listing = await self._client.get(f"{self._path}?{query}")
        if listing is None:
            raise ApiError(404, f"{self._path} is not served")
        listed = {o["metadata"]["name"]: o for o in listing.get("items") or []}
        alive = {_uid(o) for o in listed.values()}
        for gone in (o for o in self._objects.values() if _uid(o) not in alive):  # deleted while unwatched
            VERDICTS.forget(_uid(gone))
        self._objects = listed
        self._version = str((listing.get("metadata") or {}).get("resourceVersion", ""))

    async def _watch(self) -> None:
        backoff = 1.0
        while True:
            try:
                async with contextlib.aclosing(
                    self._client.watch(
                        self._path,
                        label_selector=self._selector,
                        resource_version=self._version,
                        timeout_seconds=WATCH_SECONDS,
                    )
                ) as events:
                    async for event in events:
                        self._apply(event)
                        backoff = 1.0
                continue
            except ApiError as err:
                if err.status == 410:  # Gone: start again from a fresh list
                    with contextlib.suppress(Exception):
                        await self._list()
                    continue
                log.warning("watching %s failed (%s); retrying in %.0f s", self._path, err, backoff)
            except Exception as err:  # a dropped connection, a closed session: retried, never fatal
                if self._client.closed:
                    return
                log.warning("watching %s failed (%r); retrying in %.0f s", self._path, err, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)

    def _apply(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if kind == "DELETED":
            known = self._objects.get(obj["metadata"]["name"])
            if known is not None and _newer(obj, known):  # not an object the operator wrote since
                del self._objects[obj["metadata"]["name"]]
                VERDICTS.forget(_uid(known))
        elif kind in ("ADDED", "MODIFIED"):
            self.remember(obj)
        if version:
            self._version = version


class Children:
    """Watched copies of the operator's children (objects labelled `selector`), per resource and namespace,
    started on first use and shared by every pass."""

    def __init__(self, client: KubeClient, selector: str) -> None:
        self._client = client
        self._selector = selector
        self._watches: dict[tuple[ResourceRef, str], Watched | None] = {}
        self._starting: dict[tuple[ResourceRef, str], asyncio.Future[Watched | None]] = {}

    async def get(self, ref: ResourceRef, namespace: str, name: str) -> dict[str, Any] | None:
        watched = await self._copy(ref, namespace)
        if watched is None:
            return await self._client.get(ref.path(namespace, name))
        return watched.get(name)

    async def labelled(
        self, ref: ResourceRef, namespace: str, label: str, value: str
    ) -> list[dict[str, Any]]:
        watched = await self._copy(ref, namespace)
        if watched is None:
            return await list_labelled(self._client, ref, namespace, f"{self._selector},{label}={value}")
        return watched.labelled(label, value)

    def remember(self, ref: ResourceRef, stored: dict[str, Any]) -> None:
        watched = self._watches.get((ref, stored["metadata"].get("namespace", "")))
        if watched is not None:
            watched.remember(stored)

    def __len__(self) -> int:
        """Copies being watched."""
        return sum(1 for i in self._watches.values() if i is not None)

    async def close(self) -> None:
        watches = [i for i in self._watches.values() if i is not None]
        self._watches.clear()
        await asyncio.gather(*(i.stop() for i in watches))

    async def _copy(self, ref: ResourceRef, namespace: str) -> Watched | None:
        """The watched copy, or None where reads go to the API server."""
        try:
            return await self._watched(ref, namespace)
        except Exception as err:  # not served yet, or the LIST failed for now: tried again at the next read
            log.debug("no watched copy of %s in %s yet: %r", ref.plural, namespace, err)
            return None

    async def _watched(self, ref: ResourceRef, namespace: str) -> Watched | None:
        key = (ref, namespace)
        if key in self._watches:
            return self._watches[key]
        starting = self._starting.get(key)
        if starting is None:  # the first of concurrent passes starts it; the others wait for it
            starting = self._starting[key] = asyncio.ensure_future(self._start(ref, namespace))
        try:
            return await asyncio.shield(starting)
        finally:
            if starting.done():
                self._starting.pop(key, None)

    async def _start(self, ref: ResourceRef, namespace: str) -> Watched | None:
        watched = Watched(self._client, ref, namespace, self._selector)
        try:
            await watched.start()
        except ApiError as err:
            if err.status not in (401, 403):
                raise
            log.warning("cannot list %s in %s (%s): reading each child instead", ref.plural, namespace, err)
            self._watches[(ref, namespace)] = None
            return None
        self._watches[(ref, namespace)] = watched
        return watched


async def list_labelled(
    client: KubeClient, ref: ResourceRef, namespace: str, selector: str
) -> list[dict[str, Any]]:
    """The objects `selector` matches, asked of the API server."""
    listing = await client.get(f"{ref.path(namespace)}?{urllib.parse.urlencode({'labelSelector': selector})}")
    return list((listing or {}).get("items") or [])


def _uid(child: dict[str, Any]) -> str:
    return str(child["metadata"].get("uid", ""))


def _newer(candidate: dict[str, Any], known: dict[str, Any] | None) -> bool:
    """Whether `candidate` is a later version than `known`. resourceVersions are opaque, but the API
    server's (etcd revisions) are increasing integers; anything else is taken as newer."""
    if known is None:
        return True
    new = str(candidate["metadata"].get("resourceVersion", ""))
    old = str(known["metadata"].get("resourceVersion", ""))
    return not (new.isdigit() and old.isdigit()) or int(new) >= int(old)
