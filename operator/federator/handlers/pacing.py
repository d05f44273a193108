"""How daemons wait between passes."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf


async def pause(stopped: kopf.DaemonStopped, seconds: float, wakeup: asyncio.Event | None = None) -> None:
    """Sleep, waking at once when the daemon is stopped (kopf then sees it exit instantly instead of waiting
    out the cancellation backoff) or `wakeup` is set. Not `stopped.wait(timeout)`: its inner wait_for can end
    in a TimeoutError when shutdown cancels it (Python 3.11's race), which kopf re-raises; asyncio.wait's
    timeout raises nothing."""
    waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(stopped.wait())]
    if wakeup is not None:
        waiters.append(asyncio.ensure_future(wakeup.wait()))
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
