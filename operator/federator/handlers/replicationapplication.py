"""ReplicationApplication handlers: reconcile on spec changes, observe periodically (members join and
leave, their readiness changes, the Spark application's state), clean up on delete."""

from __future__ import annotations

from typing import Any

import kopf

from federator.handlers.context import OperatorContext
from federator.handlers.pacing import observe_every_interval, settled_passes
from federator.handlers.reporting import report_deletion, reported_pass, settle
from federator.kube.resources import REPLICATION_APPLICATIONS as APPLICATIONS
from federator.reconcile.replicationapplication import delete_children, reconcile
from federator.status.results import Result
from federator_contract.api.base import GROUP, VERSION
from federator_contract.api.kinds import REPLICATION_APPLICATION

RESOURCE = (GROUP, VERSION, REPLICATION_APPLICATION.plural)
KIND = REPLICATION_APPLICATION.kind


@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
@kopf.on.resume(*RESOURCE)
async def apply(body: kopf.Body, patch: kopf.Patch, memo: OperatorContext, **_: Any) -> None:
    settle(await _reconcile(body, memo), patch)


@kopf.daemon(*RESOURCE, cancellation_timeout=5)
async def observe(body: kopf.Body, memo: OperatorContext, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """Keeps the members, the Spark application and status current, and puts back what was changed."""
    one_pass = settled_passes(body, lambda: _reconcile(body, memo))
    path = APPLICATIONS.path(body.meta["namespace"], body.meta["name"], "status")
    await observe_every_interval(memo, body, stopped, path, one_pass)


@kopf.on.delete(*RESOURCE)
async def remove(body: kopf.Body, memo: OperatorContext, **_: Any) -> None:
    report_deletion(KIND, body, memo, await delete_children(memo.client, dict(body)))


async def _reconcile(body: kopf.Body, memo: OperatorContext) -> Result:
    return await reported_pass(
        KIND, body, memo, lambda state: reconcile(memo.reads, memo.settings, dict(body), state.application)
    )
