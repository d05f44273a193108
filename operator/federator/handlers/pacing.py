"""How daemons wait between passes, and the loop of the observe daemons."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import kopf

from federator.handlers.context import OperatorContext
from federator.status.results import Result, status_field
from federator_contract.api.base import ObjectStatus


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


async def observe_every_interval(
    context: OperatorContext,
    body: kopf.Body,
    stopped: kopf.DaemonStopped,
    status_path: str,
    one_pass: Callable[[], Awaitable[dict[str, Any] | None]],
    wakeup: asyncio.Event | None = None,
) -> None:
    """Every observe interval, one pass; the status patch it returns is written (None or empty: nothing
    changed, nothing is written). A set `wakeup` starts the pass at once; it is cleared before the pass, so
    that a wake during the pass is not lost but starts the next one. Ends when the daemon is stopped, the
    object is being deleted, or the operator shuts down — kopf's cleanup can close the client before it
    stops daemons: nothing is lost, the next operator observes again."""
    while not stopped:
        await pause(stopped, context.settings.observe_interval_seconds, wakeup)
        if wakeup is not None:
            wakeup.clear()
        if stopped or context.stopping or body.meta.get("deletionTimestamp"):
            return
        try:
            patch = await one_pass()
            if patch:
                await context.client.patch(status_path, {"status": patch})
        except Exception:
            if context.stopping:
                return
            raise


def settled_passes(
    body: kopf.Body, run: Callable[[], Awaitable[Result]]
) -> Callable[[], Awaitable[dict[str, Any] | None]]:
    """The observe pass of a spec-reconciled kind: ``run``'s status patch, or None while the spec handler
    has a generation in hand (observing it now would race the handler's write)."""

    async def one_pass() -> dict[str, Any] | None:
        if status_field(ObjectStatus, body.status, "observed_generation") != body.meta.get("generation"):
            return None
        return (await run()).status_patch

    return one_pass
