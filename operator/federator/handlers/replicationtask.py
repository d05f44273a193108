"""ReplicationTask handlers: reconcile on spec changes, observe periodically, clean up on delete."""

from __future__ import annotations

from typing import Any

import kopf

from federator.handlers.context import OperatorContext
from federator.handlers.pacing import observe_every_interval, settled_passes
from federator.handlers.reporting import report_deletion, reported_pass, settle
from federator.kube.resources import REPLICATION_TASKS as TASKS
from federator.reconcile.replicationtask import delete_children, reconcile
from federator.status.results import Result
from federator_contract.api.base import GROUP, VERSION

RESOURCE = (GROUP, VERSION, "replicationtasks")
KIND = "ReplicationTask"


@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
@kopf.on.resume(*RESOURCE)
async def apply(body: kopf.Body, patch: kopf.Patch, memo: OperatorContext, **_: Any) -> None:
    settle(await _reconcile(body, memo), patch)


# A pass in flight (its source probe) is let finish: cancelling the SDKs mid-connection leaks sockets.
@kopf.daemon(*RESOURCE, cancellation_backoff=6, cancellation_timeout=5)
async def observe(body: kopf.Body, memo: OperatorContext, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """Keeps status fresh (the Spark application's state) and puts back children changed by hand; a switch
    of a followed group wakes it (handlers/followers.py), so it plans onto the new member at once."""
    one_pass = settled_passes(body, lambda: _reconcile(body, memo))
    path = TASKS.path(body.meta["namespace"], body.meta["name"], "status")
    await observe_every_interval(memo, body, stopped, path, one_pass, memo.objects.of(body).wakeup)


@kopf.on.delete(*RESOURCE)
async def remove(body: kopf.Body, memo: OperatorContext, **_: Any) -> None:
    report_deletion(KIND, body, memo, await delete_children(memo.client, dict(body)))


async def _reconcile(body: kopf.Body, memo: OperatorContext) -> Result:
    return await reported_pass(
        KIND,
        body,
        memo,
        lambda state: reconcile(memo.reads, memo.settings, dict(body), memo.source_probes, state.task),
    )
