"""What every handler does with a reconcile pass's result: its notes as Kubernetes Events, its
conditions as metrics, a blocked pass counted as a reconcile error; and with a deletion's."""

from __future__ import annotations

import kopf

from federator import metrics, reasons
from federator.handlers.context import OperatorContext
from federator.status.results import Result


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
