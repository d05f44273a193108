"""ServiceBusMirror handlers: provision on spec changes, refresh status and re-check drift periodically,
remove what the mirror created on delete."""

from __future__ import annotations

import time
from typing import Any

import kopf

from federator import metrics, reasons
from federator.handlers.context import OperatorContext
from federator.handlers.pacing import observe_every_interval
from federator.handlers.reporting import report
from federator.kube.resources import SERVICE_BUS_MIRRORS as MIRRORS
from federator.provision.errors import backoff_seconds
from federator.reconcile.servicebusmirror import delete_mirror, reconcile
from federator.status.results import Result
from federator_contract.api.base import GROUP, VERSION

RESOURCE = (GROUP, VERSION, "servicebusmirrors")
KIND = "ServiceBusMirror"
DELETE_RETRIES = 5
"""Transient failures while removing provisioned entities are retried this often; then the mirror is
released with a Warning naming what is left (a mirror must not hang in deletion forever)."""


@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
@kopf.on.resume(*RESOURCE)
async def apply(body: kopf.Body, patch: kopf.Patch, memo: OperatorContext, **_: Any) -> None:
    result = await _reconcile(body, memo, provision=True)
    for key, value in result.status_patch.items():
        patch.status[key] = value


@kopf.daemon(*RESOURCE, cancellation_timeout=5)
async def observe(body: kopf.Body, memo: OperatorContext, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """Refreshes pair status every observe interval; re-reads members for drift when their schedule says
    (the drift interval, or backoff after a failure)."""

    async def one_pass() -> dict[str, Any]:
        due = memo.objects.of(body).schedule.due(time.monotonic())
        return (await _reconcile(body, memo, provision=due)).status_patch

    path = MIRRORS.path(body.meta["namespace"], body.meta["name"], "status")
    await observe_every_interval(memo, body, stopped, path, one_pass)


@kopf.on.delete(*RESOURCE)
async def remove(body: kopf.Body, memo: OperatorContext, retry: int, **_: Any) -> None:
    async with memo.objects.of(body).lock:
        deletion = await delete_mirror(memo.client, memo.management, dict(body))
    if deletion.deleted:
        kopf.info(body, reason=reasons.DELETED, message="deleted " + ", ".join(deletion.deleted))
    transient = [o for o in deletion.left if o.transient]
    if transient and retry < DELETE_RETRIES:
        delay = backoff_seconds(retry, memo.settings.retry_seconds, memo.management.drift_interval_seconds)
        raise kopf.TemporaryError("; ".join(o.message for o in transient), delay=delay)
    for outcome in deletion.left:
        left = ", ".join(outcome.entities) or "its replication entities"
        kopf.warn(
            body,
            reason=reasons.CLEANUP_INCOMPLETE,
            message=f"{outcome.message}; remove {left} on member {outcome.name} by hand",
        )
    memo.objects.forget(body)
    metrics.record_conditions(KIND, body.meta["namespace"], body.meta["name"], None)


async def _reconcile(body: kopf.Body, memo: OperatorContext, *, provision: bool) -> Result:
    env, state = memo.management, memo.objects.of(body)
    with metrics.RECONCILE_DURATION.labels(KIND).time():
        async with state.lock:  # one pass at a time: the spec handler and the daemon would write concurrently
            if body.meta.get("deletionTimestamp"):  # deletion ran meanwhile: create nothing again
                return Result({}, [], [])
            result = await reconcile(memo.reads, env, dict(body), provision=provision)
    if provision:
        failed = result.retry_after is not None
        state.schedule.record(
            time.monotonic(), failed, memo.settings.retry_seconds, env.drift_interval_seconds
        )
    report(KIND, body, result)
    return result
