"""Results of asynchronous reads, shared for a while: whoever asks for the same key meanwhile — at the same
moment or later — gets the same answer without another read. What is kept stays bounded by the keys asked
for within one `ttl`: expired results are swept."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    def __init__(self, ttl: float, keep: Callable[[V], bool] = lambda _: True) -> None:
        """`keep`: whether a result is shared after its read ended (e.g. not "missing", which callers
        want to see change at once); a failed read is never kept."""
        self.ttl = ttl
        self._keep = keep
        self._entries: dict[K, tuple[float, asyncio.Future[V]]] = {}
        self._swept = time.monotonic()

    async def get(self, key: K, read: Callable[[], Awaitable[V]]) -> V:
        now = time.monotonic()
        self._sweep(now)
        entry = self._entries.get(key)
        if entry is None or (entry[1].done() and now - entry[0] >= self.ttl):
            future: asyncio.Future[V] = asyncio.ensure_future(read())
            entry = self._entries[key] = (now, future)
            future.add_done_callback(lambda done: self._settled(key, done))
        elif entry[1].done():  # the common case, a kept answer: no shield to build
            return entry[1].result()
        # Shielded: one asker cancelled (its pass stopped) does not cancel the read the others wait for.
        return await asyncio.shield(entry[1])

    def __len__(self) -> int:
        return len(self._entries)

    def _settled(self, key: K, done: asyncio.Future[V]) -> None:
        failed = done.cancelled() or done.exception() is not None
        if (failed or not self._keep(done.result())) and self._entries.get(key, (0, None))[1] is done:
            del self._entries[key]

    def _sweep(self, now: float) -> None:
        if now - self._swept < self.ttl:
            return
        self._swept = now
        for key, (at, future) in list(self._entries.items()):
            if future.done() and now - at >= self.ttl:
                del self._entries[key]
