"""ServiceBusMirror handlers: provision on spec changes, refresh status and re-check drift periodically,
remove what the mirror created on delete."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import kopf

from federator import metrics
from federator.handlers.pacing import pause
from federator.handlers.reporting import report
from federator.kube.client import ResourceRef
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import backoff_seconds
from federator.provision.schedule import ProvisionSchedule
from federator.reconcile.servicebusmirror import delete_mirror, reconcile
from federator.status.results import Result
from federator_contract.api.base import GROUP, VERSION

RESOURCE = (GROUP, VERSION, "servicebusmirrors")
KIND = "ServiceBusMirror"
MIRRORS = ResourceRef(f"{GROUP}/{VERSION}", "servicebusmirrors")
DELETE_RETRIES = 5
"""Transient failures while removing provisioned entities are retried this often; then the mirror is
released with a Warning naming what is left (a mirror must not hang in deletion forever)."""


@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
@kopf.on.resume(*RESOURCE)
async def apply(body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
    result = await _reconcile(body, memo, provision=True)
    for key, value in result.status_patch.items():
        patch.status[key] = value


@kopf.daemon(*RESOURCE, cancellation_timeout=5)
async def observe(body: kopf.Body, memo: Any, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """Refreshes pair status every observe interval; re-reads members for drift when their schedule says
    (the drift interval, or backoff after a failure)."""
    while not stopped:
        await pause(stopped, memo.federator.observe_interval_seconds)
        if stopped or memo.client.closed or body.meta.get("deletionTimestamp"):
            return
        try:
            due = _schedule(memo, body).due(time.monotonic())
            result = await _reconcile(body, memo, provision=due)
            if result.status_patch:
                path = MIRRORS.path(body.meta["namespace"], body.meta["name"], "status")
                await memo.client.patch(path, {"status": result.status_patch})
        except Exception:
            if memo.client.closed:  # shutdown closed the client first: the next operator observes again
                return
            raise


@kopf.on.delete(*RESOURCE)
async def remove(body: kopf.Body, memo: Any, retry: int, **_: Any) -> None:
    async with _lock(memo, body):
        deletion = await delete_mirror(memo.client, _environment(memo), dict(body))
    if deletion.deleted:
        kopf.info(body, reason="Deleted", message="deleted " + ", ".join(deletion.deleted))
    transient = [o for o in deletion.left if o.transient]
    if transient and retry < DELETE_RETRIES:
        delay = backoff_seconds(
            retry, memo.federator.retry_seconds, _environment(memo).drift_interval_seconds
        )
        raise kopf.TemporaryError("; ".join(o.message for o in transient), delay=delay)
    for outcome in deletion.left:
        left = ", ".join(outcome.entities) or "its replication entities"
        kopf.warn(
            body,
            reason="CleanupIncomplete",
            message=f"{outcome.message}; remove {left} on member {outcome.name} by hand",
        )
    for per_mirror in ("mirror_schedules", "mirror_locks"):
        memo.get(per_mirror, {}).pop(str(body.meta.get("uid")), None)
    metrics.record_conditions(KIND, body.meta["namespace"], body.meta["name"], None)


async def _reconcile(body: kopf.Body, memo: Any, *, provision: bool) -> Result:
    env = _environment(memo)
    started = time.monotonic()
    try:
        async with _lock(memo, body):
            if body.meta.get("deletionTimestamp"):  # deletion ran meanwhile: create nothing again
                return Result({}, [], [])
            result = await reconcile(memo.client, env, dict(body), provision=provision)
    finally:
        metrics.RECONCILE_DURATION.labels(KIND).observe(time.monotonic() - started)
    if provision:
        failed = result.retry_after is not None
        _schedule(memo, body).record(
            time.monotonic(), failed, memo.federator.retry_seconds, env.drift_interval_seconds
        )
    report(KIND, body, result)
    return result


def _environment(memo: Any) -> ManagementEnvironment:
    env: ManagementEnvironment = memo.management  # built at startup from the operator settings
    return env


def _schedule(memo: Any, body: kopf.Body) -> ProvisionSchedule:
    schedules: dict[str, ProvisionSchedule] = memo.setdefault("mirror_schedules", {})
    return schedules.setdefault(str(body.meta.get("uid")), ProvisionSchedule())


def _lock(memo: Any, body: kopf.Body) -> asyncio.Lock:
    """One pass at a time per mirror: the spec handler and the daemon would otherwise write concurrently."""
    locks: dict[str, asyncio.Lock] = memo.setdefault("mirror_locks", {})
    return locks.setdefault(str(body.meta.get("uid")), asyncio.Lock())
