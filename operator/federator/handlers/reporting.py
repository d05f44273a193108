"""What every handler does with a reconcile pass's result: its notes as Kubernetes Events, its
conditions as metrics, a blocked pass counted as a reconcile error."""

from __future__ import annotations

import kopf

from federator import metrics
from federator.status.results import Result


def report(kind: str, body: kopf.Body, result: Result) -> None:
    for note in result.notes:
        (kopf.info if note.type == "Normal" else kopf.warn)(body, reason=note.reason, message=note.message)
    metrics.record_conditions(kind, body.meta["namespace"], body.meta["name"], result.conditions)
    if result.blocked_by is not None:
        metrics.RECONCILE_ERRORS.labels(kind, result.blocked_by).inc()
