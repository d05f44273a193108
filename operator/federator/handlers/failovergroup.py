"""FailoverGroup handlers: one daemon per group probes and publishes every `spec.probe.periodSeconds`; a
spec change wakes it at once (a manual switch must not wait a period), and a switch it writes wakes the
tasks that follow the group (handlers/followers.py); deletion removes what it published."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from federator import metrics, reasons
from federator.handlers.context import OperatorContext
from federator.handlers.followers import Followed, wake_followers
from federator.handlers.pacing import pause
from federator.handlers.reporting import report
from federator.kube.resources import FAILOVER_GROUPS as GROUPS
from federator.reconcile.failovergroup import GroupResult, delete_children, reconcile
from federator_contract.api.base import GROUP, VERSION

RESOURCE = (GROUP, VERSION, "failovergroups")
KIND = "FailoverGroup"


@kopf.on.update(*RESOURCE, field="spec")
async def spec_changed(body: kopf.Body, memo: OperatorContext, **_: Any) -> None:
    memo.objects.of(body).wakeup.set()


# A round in flight is let finish (cancelling the SDKs mid-connection leaks their sockets).
@kopf.daemon(*RESOURCE, cancellation_backoff=10, cancellation_timeout=5)
async def probe(body: kopf.Body, memo: OperatorContext, stopped: kopf.DaemonStopped, **kwargs: Any) -> None:
    followers: kopf.Index[Followed, str] = kwargs["followers"]  # the index, by its name (followers.py)
    logger: logging.Logger | logging.LoggerAdapter[Any] = kwargs["logger"]
    wakeup = memo.objects.of(body).wakeup
    namespace, name = body.meta["namespace"], body.meta["name"]
    path = GROUPS.path(namespace, name)
    while not stopped:
        wakeup.clear()
        try:
            # Read back the object: the previous round's status must be this round's input.
            current = await memo.client.get(path)
            if current is None or current["metadata"].get("deletionTimestamp"):
                return
            result = await _reconcile(body, memo, current)
            if result.result.status_patch:
                await memo.client.patch(f"{path}/status", {"status": result.result.status_patch})
            if result.switches:  # written first: the followers' passes read the group's new members
                woken = wake_followers(memo.objects, followers, namespace, name)
                logger.info("switch published; woke %d following ReplicationTask(s)", woken)
        except Exception:
            if memo.stopping:  # shutting down: the next operator carries on
                return
            raise
        period = ((current.get("spec") or {}).get("probe") or {}).get("periodSeconds", 10)
        await pause(stopped, period, wakeup)


@kopf.on.delete(*RESOURCE)
async def remove(body: kopf.Body, memo: OperatorContext, **_: Any) -> None:
    deleted, failed = await delete_children(memo.client, memo.failover, dict(body))
    if deleted:
        kopf.info(body, reason=reasons.DELETED, message="deleted " + ", ".join(deleted))
    for problem in failed:
        kopf.warn(body, reason=reasons.DELETE_FAILED, message=problem)
    memo.objects.forget(body)
    metrics.record_conditions(KIND, body.meta["namespace"], body.meta["name"], None)


async def _reconcile(body: kopf.Body, memo: OperatorContext, current: dict[str, Any]) -> GroupResult:
    with metrics.RECONCILE_DURATION.labels(KIND).time():
        found = await reconcile(memo.reads, memo.failover, current)
    report(KIND, body, found.result)
    namespace, name = body.meta["namespace"], body.meta["name"]
    for switch in found.switches:
        if switch.roles != "consumers" and switch.cause != "initial":
            metrics.FAILOVERS.labels(namespace, name, switch.source or "", switch.target).inc()
    for phase, seconds in found.phases:
        metrics.FAILOVER_PHASE.labels(namespace, name, phase).observe(seconds)
    return found
