"""What every handler does with a reconcile pass's result: its notes as Kubernetes Events, its
conditions as metrics, a blocked pass counted as a reconcile error; and with a deletion's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import kopf

from federator import metrics, reasons
from federator.handlers.context import ObjectState, OperatorContext
from federator.status.results import Result


async def reported_pass(
    kind: str, body: kopf.Body, memo: OperatorContext, run: Callable[[ObjectState], Awaitable[Result]]
) -> Result:
    """One pass (`run`, given what the operator keeps about the object), timed and reported. One pass at a
    time per object: a daemon's pass beside the spec handler's would apply from a copy of the children not
    yet updated and report the other pass's apply as drift it corrected."""
    with metrics.RECONCILE_DURATION.labels(kind).time():
        state = memo.objects.of(body)
        async with state.lock:
            result = await run(state)
    report(kind, body, result)
    return result


def report(kind: str, body: kopf.Body, result: Result) -> None:
    for note in result.notes:
        (kopf.info if note.type == "Normal" else kopf.warn)(body, reason=note.reason, message=note.message)
    metrics.record_conditions(kind, body.meta["namespace"], body.meta["name"], result.conditions)
    if result.blocked_by is not None:
        metrics.RECONCILE_ERRORS.labels(kind, result.blocked_by).inc()


def report_deletion(kind: str, body: kopf.Body, memo: OperatorContext, deleted: list[str]) -> None:
    """What deleting the object deleted, as an Event; what the operator kept about it, forgotten."""
    if deleted:
        kopf.info(body, reason=reasons.DELETED, message="deleted " + ", ".join(deleted))
    memo.objects.forget(body)
    metrics.record_conditions(kind, body.meta["namespace"], body.meta["name"], None)


def settle(result: Result, patch: kopf.Patch) -> None:
    """A spec handler's pass: its status patch goes out with kopf's; a pass that waits on something
    outside the object is retried after the delay it asked for."""
    for key, value in result.status_patch.items():
        patch.status[key] = value
    if result.retry_after is not None:
        raise kopf.TemporaryError(f"waiting: {result.blocked_by}", delay=result.retry_after)
