"""One reconciliation pass of a ReplicationTask. Called on create/update/resume and periodically, so it
also corrects drift and keeps status fresh. Returns what to write and say; the handler does that."""

from __future__ import annotations

from typing import Any

from federator import reasons
from federator.apply.children import Outcome, ensure
from federator.failover.runtime import FailoverRuntime
from federator.failover.tasks import member_switch, read_followed_groups, source_reachable
from federator.kube.client import CONFIGMAPS, SECRETS, KubeClient, ResourceRef
from federator.observe.driver import driver_status_fields
from federator.observe.sparkapps import SparkObservation, camel, observe
from federator.planning.errors import PlanningError
from federator.planning.following import resolve_following
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.task import TaskPlan, plan_replication_task
from federator.reconcile.taskpods import checkpoint_volume, workload_identity_problem
from federator.settings import OperatorSettings
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.kinds import REPLICATION_TASK
from federator_contract.api.replicationtask import ReplicationTaskSpec

SPARK_RUNNING = "SparkApplicationRunning"


async def reconcile(
    client: KubeClient,
    settings: OperatorSettings,
    body: dict[str, Any],
    failover: FailoverRuntime | None = None,
) -> Result:
    """One pass for the task in `body` (its current status included). With `failover`, the source is
    probed (condition SourceReachable)."""
    found = await _pass(client, settings, body, failover)
    return status_result(body, found, spec_warnings(REPLICATION_TASK, body.get("spec")))


async def _pass(
    client: KubeClient, settings: OperatorSettings, body: dict[str, Any], failover: FailoverRuntime | None
) -> Findings:
    meta, spec_raw = body["metadata"], body.get("spec") or {}
    problems = semantic_problems(REPLICATION_TASK, spec_raw)
    if problems:
        return Findings(cond.stalled(reasons.INVALID_SPEC, "; ".join(str(p) for p in problems)))
    spec = ReplicationTaskSpec.model_validate(spec_raw)
    try:
        following = resolve_following(spec, await read_followed_groups(client, meta["namespace"], spec))
        plan = plan_replication_task(
            name=meta["name"],
            namespace=meta["namespace"],
            spec=following.spec,
            settings=settings,
            uid=meta.get("uid"),
            generation=meta.get("generation"),
            following=following,
        )
    except PlanningError as err:
        if err.reason in (reasons.FAILOVER_GROUP_PENDING, reasons.FAILOVER_GROUP_NOT_FOUND):
            waiting = cond.reconciling if err.reason == reasons.FAILOVER_GROUP_PENDING else cond.stalled
            return Findings(waiting(err.reason, err.message), retry_after=settings.retry_seconds)
        return Findings(cond.stalled(err.reason, err.message))
    blocked = await _preconditions(client, plan, meta["namespace"], settings)
    if blocked is not None:
        return blocked
    launcher = LAUNCHERS[plan.launcher]
    app_ref = ResourceRef(launcher.API_VERSION, launcher.PLURAL)
    # A FailoverGroup switch re-plans the children: announced as such, not as drift.
    switch = await member_switch(client, plan, following)
    notes = [switch] if switch is not None else []
    stored = await client.get(CONFIGMAPS.path(meta["namespace"], plan.spark_app.config_map))
    if (await ensure(client, CONFIGMAPS, plan.config_map, stored))[0] is Outcome.RESTORED and switch is None:
        notes.append(
            Note("Warning", "DriftCorrected", f"ConfigMap {plan.spark_app.config_map} was changed; restored")
        )
    desired = render_spark_application(plan.launcher, plan.spark_app)
    stored = await client.get(app_ref.path(meta["namespace"], plan.spark_app.name))
    outcome, app = await ensure(client, app_ref, desired, stored)
    existed = bool((body.get("status") or {}).get("sparkApplication"))
    if outcome is Outcome.CREATED and existed:
        notes.append(
            Note("Warning", "DriftCorrected", f"{launcher.KIND} {plan.spark_app.name} was deleted; recreated")
        )
    elif outcome is Outcome.CREATED:
        notes.append(
            Note("Normal", "SparkApplicationCreated", f"{launcher.KIND} {plan.spark_app.name} created")
        )
    elif outcome is Outcome.RESTORED and switch is None:
        notes.append(
            Note(
                "Warning",
                "DriftCorrected",
                f"{launcher.KIND} {plan.spark_app.name} was changed or lost; restored",
            )
        )
    observation = observe(launcher.API_VERSION, app)
    result = _from_observation(observation, plan.spark_app.name)
    result.notes[:0] = notes
    result.status_fields = {
        "sparkApplication": {
            "apiVersion": launcher.API_VERSION,
            "name": plan.spark_app.name,
            "state": observation.state,
        },
        "activeSourceMember": following.source_member,
    }
    if observation.phase == "Running":  # counts, lag per partition and translation, from the driver
        result.status_fields.update(
            await driver_status_fields(client, meta["namespace"], meta["name"], settings.app_metrics_port)
        )
    if failover is not None:
        result.condition_updates.append(
            await source_reachable(client, failover, meta["namespace"], following.spec)
        )
    if (shared := await checkpoint_volume(client, plan.spark_app)) is not None:
        result.condition_updates.append(shared)
    return result


async def _preconditions(
    client: KubeClient, plan: TaskPlan, namespace: str, settings: OperatorSettings
) -> Findings | None:
    """What the task waits for, or None when it can run."""
    for binding in plan.spark_app.secrets:
        secret = await client.get(SECRETS.path(namespace, binding.secret_name))
        if secret is None:
            message = (
                f"Secret {namespace}/{binding.secret_name} does not exist; create it with key {binding.key!r}"
            )
            return Findings(
                cond.stalled(reasons.SECRET_NOT_FOUND, message), retry_after=settings.retry_seconds
            )
        if binding.key not in (secret.get("data") or {}) and binding.key not in (
            secret.get("stringData") or {}
        ):
            message = f"Secret {namespace}/{binding.secret_name} has no key {binding.key!r}"
            return Findings(
                cond.stalled(reasons.SECRET_KEY_NOT_FOUND, message), retry_after=settings.retry_seconds
            )
    if (identity := await workload_identity_problem(client, plan.spark_app)) is not None:
        return Findings(cond.stalled(*identity), retry_after=settings.retry_seconds)
    launcher = LAUNCHERS[plan.launcher]
    if not await client.serves(launcher.API_VERSION, launcher.PLURAL):
        message = (
            f"the cluster does not serve {launcher.API_VERSION} {launcher.PLURAL}: install the "
            f"{plan.launcher} Spark operator, or choose the other launcher (spec.runtime.launcher)"
        )
        return Findings(
            cond.stalled(reasons.LAUNCHER_NOT_INSTALLED, message), retry_after=settings.retry_seconds
        )
    return None


def _from_observation(observation: SparkObservation, name: str) -> Findings:
    state = observation.state or "New"
    detail = f"Spark application {name} is {state}" + (
        f": {observation.message}" if observation.message else ""
    )
    running = cond.ConditionUpdate(
        SPARK_RUNNING, "True" if observation.phase == "Running" else "False", camel(state), detail
    )
    match observation.phase:
        case "Running":
            updates = cond.ready(reasons.RUNNING, detail)
        case "Failed":
            updates = cond.stalled(reasons.SPARK_APPLICATION_FAILED, detail)
        case "Restarting":
            updates = cond.reconciling(reasons.SPARK_APPLICATION_RESTARTING, detail)
        case "Stopped":
            updates = cond.reconciling(reasons.SPARK_APPLICATION_STOPPED, detail)
        case "Unknown":
            updates = cond.reconciling(reasons.SPARK_APPLICATION_STATE_UNKNOWN, detail)
        case _:
            updates = cond.reconciling(reasons.SPARK_APPLICATION_PENDING, detail)
    return Findings([*updates, running])


async def delete_children(client: KubeClient, body: dict[str, Any]) -> list[str]:
    """Delete what the task created (owner references would, but not every cluster collects garbage
    promptly, and a finalizer makes deletion observable). Returns what was deleted."""
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    deleted = []
    for launcher in LAUNCHERS.values():
        if await client.delete(ResourceRef(launcher.API_VERSION, launcher.PLURAL).path(namespace, name)):
            deleted.append(f"{launcher.KIND} {name} ({launcher.API_VERSION})")
    if await client.delete(CONFIGMAPS.path(namespace, f"{name}-task")):
        deleted.append(f"ConfigMap {name}-task")
    return deleted
