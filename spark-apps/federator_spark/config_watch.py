"""A shared application's task configs, from the ConfigMaps the operator writes for its member tasks (key
``task.json``, label ``federator.io/application=<name>``), followed through the API server as the
Kubernetes API concepts prescribe ("Efficient detection of changes"): list them once, then watch from
the list's ``resourceVersion``, carrying on from the last version seen (an event's or a ``BOOKMARK``'s)
whenever a watch ends; a ``410 Gone`` (the server no longer keeps that version: an ``ERROR`` event or
the answer to the watch itself) means list again and replace everything known.

An outage of the API server is never fatal: the configs last seen stay as they are (so the tasks keep
running), the watch is retried with a backoff (1 s doubling up to 30 s), and the changes made meanwhile
arrive when it answers again. What is kept is one entry per ConfigMap that exists; a deleted one is
forgotten. :class:`ConfigMapReader` hands them to the same reconciliation as files
(``federator_spark.fleet``): a ConfigMap without the key, or whose config does not parse, is reported
against the ConfigMap by name.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass
from typing import Any

from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark import fleet
from federator_spark.fleet import Found, Parsed
from federator_spark.kube_client import ApiAccess, ApiError, Expired, WatchStream

logger = logging.getLogger("federator.host")
TASK_KEY = "task.json"
WATCH_SECONDS = 300  # a watch's timeoutSeconds; the server ends it and the next one goes on from there
REQUEST_SECONDS = 30.0  # a list, or a watch's silence beyond its timeout: the connection is dead
RETRY_SECONDS = 1.0
RETRY_CAP_SECONDS = 30.0


@dataclass(frozen=True)
class Entry:
    """A ConfigMap as last seen: its ``task.json`` (None: it has no such key)."""

    text: str | None


class ConfigMapWatch:
    """Lists and watches the ConfigMaps of ``namespace`` matching ``selector`` in a thread of its own."""

    def __init__(
        self,
        access: ApiAccess,
        namespace: str,
        selector: str,
        *,
        watch_seconds: int = WATCH_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
        retry_cap_seconds: float = RETRY_CAP_SECONDS,
    ) -> None:
        self.access, self.namespace, self.selector = access, namespace, selector
        self.path = f"/api/v1/namespaces/{namespace}/configmaps"
        self.watch_seconds = watch_seconds
        self.retry = (retry_seconds, retry_cap_seconds)
        self.resource_version: str | None = None
        self._listed: str | None = None  # the version the last list answered
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stream: WatchStream | None = None
        self._failures = 0
        self._thread = threading.Thread(target=self._run, name="federator-configmaps", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        stream = self._stream
        if stream is not None:
            stream.interrupt()
        self._thread.join(timeout=REQUEST_SECONDS)

    def configmaps(self) -> dict[str, Entry]:
        """The ConfigMaps as last seen, by name."""
        with self._lock:
            return dict(self._entries)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
            except Expired as error:
                logger.info("task ConfigMaps: %s; listing them again", error)
                if self.resource_version == self._listed:  # straight after a list: not a loop without pause
                    self._wait(error)
                self.resource_version = None
            except Exception as error:  # an outage, or an answer it cannot read: never the end of the watch
                if not self._stopping.is_set():
                    self._wait(error)

    def _wait(self, error: BaseException) -> None:
        self._failures += 1
        delay = fleet.backoff(self._failures, *self.retry)
        logger.warning(
            "task ConfigMaps: cannot follow them (%s: %s); the tasks keep running with the "
            "configs they have, trying again in %.0f s",
            type(error).__name__,
            error,
            delay,
        )
        self._stopping.wait(delay)

    def _list(self) -> None:
        document = self.access.get_json(self.path, {"labelSelector": self.selector}, REQUEST_SECONDS)
        entries = {item["metadata"]["name"]: entry(item) for item in document.get("items") or []}
        with self._lock:
            self._entries = entries
        self.resource_version = self._listed = str(document["metadata"]["resourceVersion"])
        self._answered()
        logger.info("task ConfigMaps (%s): %d", self.selector, len(entries))

    def _watch(self) -> None:
        params = {
            "labelSelector": self.selector,
            "resourceVersion": str(self.resource_version),
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.watch_seconds),
        }
        stream = WatchStream(self.access, self.path, params, self.watch_seconds + REQUEST_SECONDS)
        self._stream = stream
        try:
            self._answered()
            if self._stopping.is_set():  # stopped while it connected: stop() found no stream to cut
                return
            for event in stream:
                if self._stopping.is_set():
                    return
                self._apply(event)
        finally:
            self._stream = None
            stream.close()

    def _answered(self) -> None:
        if self._failures:
            logger.info("task ConfigMaps: the API server answers again")
        self._failures = 0

    def _apply(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            message = f"HTTP {code}: {obj.get('message')}"
            raise Expired(message, 410) if code == 410 else ApiError(message, code)
        meta = obj.get("metadata") or {}
        with self._lock:
            if kind in ("ADDED", "MODIFIED"):
                self._entries[meta["name"]] = entry(obj)
            elif kind == "DELETED":
                self._entries.pop(meta["name"], None)
        if meta.get("resourceVersion"):  # BOOKMARK: nothing changed up to it
            self.resource_version = str(meta["resourceVersion"])


def entry(configmap: dict[str, Any]) -> Entry:
    return Entry((configmap.get("data") or {}).get(TASK_KEY))


class ConfigMapReader:
    """The configs of the watched ConfigMaps, for ``fleet.decide``: one :class:`Found` per ConfigMap, its
    source named ``ConfigMap <namespace>/<name>``."""

    def __init__(self, watch: ConfigMapWatch) -> None:
        self.watch = watch
        self._parsed = Parsed()

    def read(self) -> list[Found]:
        found = []
        for name, item in sorted(self.watch.configmaps().items()):
            source = f"ConfigMap {self.watch.namespace}/{name}"
            text = item.text
            if text is None:
                found.append(self._parsed.broken(source, f"it has no key {TASK_KEY!r}"))
            else:
                found.append(self._parsed.found(source, text, functools.partial(parse, text)))
        return self._parsed.keep(found)


def parse(text: str) -> TaskConfig:
    try:
        return TaskConfig.from_json(text)
    except TaskConfigError as error:
        raise TaskConfigError(f"key {TASK_KEY}: {error}") from None
