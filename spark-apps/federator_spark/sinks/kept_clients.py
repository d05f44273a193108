"""Clients a Python worker keeps open between its write tasks, and closes once nothing used them for a while.

Opening an Event Hubs producer or a Service Bus sender costs seconds with the SDK, more than a batch
(``eventhubs_producers``, ``servicebus``), so a worker keeps one per target for its next tasks. In a shared
application the tasks come and go while the workers live on: a client kept forever would hold the
connections of a task removed long ago (a connection per partition, against the namespace's quota). So a
client that no task used for ``IDLE_CLOSE_SECONDS`` is closed, by a thread of the worker's own, and only
between tasks: a worker runs one task at a time, and every use of its clients is inside one
(:func:`task_running`), so none is closed under a task that holds it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

IDLE_CLOSE_SECONDS = 300.0
"""Five minutes: a member that sends every few minutes keeps its links; one removed lets them go."""
_REAP_EVERY_SECONDS = 10.0

Key = TypeVar("Key", bound=Hashable)
Client = TypeVar("Client")

_tasks_running = 0
_running_lock = threading.Lock()


@contextlib.contextmanager
def task_running() -> Iterator[None]:
    """Around a write task: no kept client is closed meanwhile."""
    global _tasks_running
    with _running_lock:
        _tasks_running += 1
    try:
        yield
    finally:
        with _running_lock:
            _tasks_running -= 1


def _between_tasks() -> bool:
    with _running_lock:
        return _tasks_running == 0


class KeptClients(Generic[Key, Client]):
    """One client per key, made on first use; closed with ``close`` once unused for ``idle_seconds``."""

    def __init__(self, what: str, close: Callable[[Client], None], idle_seconds: float = IDLE_CLOSE_SECONDS):
        self.what = what
        self._close = close
        self.idle_seconds = idle_seconds
        self._clients: dict[Key, tuple[Client, float]] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def get(self, key: Key, make: Callable[[], Client]) -> Client:
        """The kept client for ``key`` (made now if there is none), marked used."""
        with self._lock:
            client = self._clients[key][0] if key in self._clients else make()
            self._clients[key] = (client, time.monotonic())
            if self._reaper is None:
                self._reaper = threading.Thread(
                    target=self._reap_forever, daemon=True, name=f"kept-{self.what}"
                )
                self._reaper.start()
        return client

    def forget(self, key: Key) -> None:
        """Close and drop ``key``'s client now (after a failure: the next task makes a new one)."""
        with self._lock:
            kept = self._clients.pop(key, None)
        if kept is not None:
            self._closing(kept[0])

    def reap(self, now: float) -> int:
        """Close the clients unused since ``now - idle_seconds``, unless a task runs; how many."""
        if not _between_tasks():
            return 0
        with self._lock:
            idle = [key for key, (_, used) in self._clients.items() if now - used > self.idle_seconds]
            closing = [self._clients.pop(key)[0] for key in idle]
        for client in closing:
            self._closing(client)
        return len(closing)

    def __len__(self) -> int:
        return len(self._clients)

    def _closing(self, client: Client) -> None:
        try:
            self._close(client)
        except Exception as error:  # a broken client is gone either way
            logger.debug("closing a kept %s: %r", self.what, error)

    def _reap_forever(self) -> None:
        while True:
            time.sleep(_REAP_EVERY_SECONDS)
            if self.reap(time.monotonic()):
                logger.info("closed the %s no task used for %.0f s", self.what, self.idle_seconds)
