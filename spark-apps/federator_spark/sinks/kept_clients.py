"""The clients a Python worker keeps open between its tasks, one per target (an event hub's producer, a
Service Bus sender), and closes once no task has used one for ``IDLE_CLOSE_SECONDS``.

Opening a client costs about half a second with the SDKs, more than a micro-batch should take, so a worker
keeps it for its next task. But a worker of a shared application outlives the tasks it served: a task
edited, removed or moved to another member of its FailoverGroup leaves clients no task will use again, each
a connection (a Service Bus client also a keep-alive thread) open until the worker ends. A task holds the
clients it writes with by a lease (:meth:`KeptClients.acquire` / :meth:`~KeptClients.release`); a thread
closes the clients no lease holds and none used for a while. The source's receivers are kept and closed
alike (``sources/eventhubs_streams.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

IDLE_CLOSE_SECONDS = 60.0
_REAP_EVERY_SECONDS = 5.0

Key = TypeVar("Key", bound=Hashable)
Client = TypeVar("Client")


@dataclass
class _Kept(Generic[Client]):
    client: Client
    leases: int = 0
    last_used: float = field(default_factory=time.monotonic)

    def idle(self, now: float) -> float:
        """Seconds since its last use; 0 while a lease holds it."""
        return 0.0 if self.leases else now - self.last_used


class KeptClients(Generic[Key, Client]):
    """This worker's clients of one kind by key; ``close`` closes one."""

    def __init__(self, kind: str, close: Callable[[Client], None]) -> None:
        self.kind = kind
        self._close = close
        self._kept: dict[Key, _Kept[Client]] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None  # started by the first lease: a daemon forks before

    def acquire(self, key: Key, open_client: Callable[[], Client]) -> Client:
        """The kept client for ``key`` (``open_client()`` when there is none), held until released."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                kept = self._kept[key] = _Kept(open_client())
            kept.leases += 1
            kept.last_used = time.monotonic()
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, daemon=True, name=f"kept-{self.kind}s")
                self._reaper.start()
            return kept.client

    def release(self, key: Key, client: Client) -> None:
        """The task is done with ``client``: it stays open for the next, until unused for a while."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and kept.client is client:
                kept.leases -= 1
                kept.last_used = time.monotonic()

    @contextmanager
    def lease(self, key: Key, open_client: Callable[[], Client]) -> Iterator[Client]:
        client = self.acquire(key, open_client)
        try:
            yield client
        finally:
            self.release(key, client)

    def forget(self, key: Key) -> None:
        """Close and drop ``key``'s client (it failed for good): the next lease opens another."""
        with self._lock:
            kept = self._kept.pop(key, None)
        if kept is not None:
            self._closing(kept.client)

    def close_idle(self, now: float | None = None, idle_seconds: float = IDLE_CLOSE_SECONDS) -> int:
        """Close the clients no lease holds and none used for ``idle_seconds``; returns how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [key for key, kept in self._kept.items() if kept.idle(now) > idle_seconds]
            closing = [self._kept.pop(key).client for key in idle]
        for client in closing:
            self._closing(client)
        return len(closing)

    def __len__(self) -> int:
        return len(self._kept)

    def _closing(self, client: Client) -> None:
        try:
            self._close(client)
        except Exception as error:  # closing what nobody uses: its failure changes nothing
            logger.debug("closing an idle %s failed: %r", self.kind, error)

    def _reap(self) -> None:
        while True:
            time.sleep(_REAP_EVERY_SECONDS)
            self.close_idle()
