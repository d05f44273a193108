"""One reconciliation pass of a ReplicationTask, in three steps: gather what it decides from
(replicationtask_inputs.py), plan purely, apply the children; then observe the Spark application (its
driver's own report, and a probe of the source) and say what status and Events follow. Called on
create/update/resume and periodically, so it also corrects drift and keeps status fresh. The handler writes
what it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from federator import reasons
from federator.apply.children import Outcome, ensure
from federator.failover.runtime import FailoverRuntime
from federator.kube.client import CONFIGMAPS, KubeClient, ResourceRef
from federator.observe.driver import driver_status_fields
from federator.observe.sparkapps import SparkObservation, camel, observe
from federator.planning.errors import PlanningError
from federator.planning.following import Following
from federator.planning.launchers import LAUNCHERS, LauncherModule, render_spark_application
from federator.planning.task import (
    TASK_CONFIG_KEY,
    TaskPlan,
    plan_replication_task,
    task_config_map_name,
)
from federator.reconcile.replicationtask_inputs import TaskInputs, gather
from federator.reconcile.replicationtask_source import source_reachable
from federator.reconcile.taskpods import judge_checkpoint_claim, judge_service_account
from federator.settings import OperatorSettings
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.kinds import REPLICATION_TASK
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskConfigError

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
    namespace = meta["namespace"]
    problems = semantic_problems(REPLICATION_TASK, spec_raw)
    if problems:
        return Findings(cond.stalled(reasons.INVALID_SPEC, "; ".join(str(p) for p in problems)))
    spec = ReplicationTaskSpec.model_validate(spec_raw)
    inputs = await gather(client, namespace, meta["name"], spec, settings)
    planned = plan(meta, inputs, settings)
    if isinstance(planned, Findings):
        return planned
    applied = await apply(client, planned, inputs)
    observation = observe(planned.launcher.API_VERSION, applied.stored_app)
    existed = bool((body.get("status") or {}).get("sparkApplication"))
    found = findings(planned, applied, observation, existed=existed)
    if observation.phase == "Running":  # counts, lag per partition and translation, from the driver
        found.status_fields.update(
            await driver_status_fields(client, namespace, meta["name"], settings.app_metrics_port)
        )
    if failover is not None:
        found.condition_updates.append(
            await source_reachable(
                inputs.secret_source(namespace), failover.prober, namespace, planned.following.spec
            )
        )
    if planned.checkpoint_volume is not None:
        found.condition_updates.append(planned.checkpoint_volume)
    return found


# -------------------------------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class PassPlan:
    """What the pass applies, and what it says before applying."""

    task: TaskPlan
    following: Following
    launcher: LauncherModule
    app: dict[str, Any]
    """The Spark application resource, rendered for the task's launcher."""
    switch: Note | None
    """A followed group switched since the task ConfigMap was written (the app restarts on the new member)."""
    checkpoint_volume: cond.ConditionUpdate | None
    """The informative condition CheckpointVolumeShared; None for a checkpoint on no claim (a URI)."""


def plan(meta: dict[str, Any], inputs: TaskInputs, settings: OperatorSettings) -> PassPlan | Findings:
    """Pure: the children to apply, or why the task waits (Reconciling) or cannot run (Stalled)."""
    try:
        if isinstance(inputs.following, PlanningError):
            raise inputs.following
        following = inputs.following
        task = plan_replication_task(
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
    blocked = _preconditions(task, inputs, meta["namespace"])
    if blocked is not None:
        return Findings(blocked, retry_after=settings.retry_seconds)
    app = render_spark_application(task.launcher, task.spark_app)
    pods, claim = task.spark_app, inputs.checkpoint_claim
    where = f"{pods.namespace}/{pods.checkpoint_pvc.claim_name}" if pods.checkpoint_pvc else None
    shared = judge_checkpoint_claim(where, pods.executor_instances, claim) if where else None
    switch = member_switch(inputs.config_map, following)
    return PassPlan(task, following, LAUNCHERS[task.launcher], app, switch, shared)


def _preconditions(task: TaskPlan, inputs: TaskInputs, namespace: str) -> list[cond.ConditionUpdate] | None:
    """What the task waits for, or None when it can run."""
    for binding in task.spark_app.secrets:
        secret = inputs.secrets.get(binding.secret_name)
        where = f"Secret {namespace}/{binding.secret_name}"
        if secret is None:
            message = f"{where} does not exist; create it with key {binding.key!r}"
            return cond.stalled(reasons.SECRET_NOT_FOUND, message)
        if binding.key not in (secret.get("data") or {}) and binding.key not in (
            secret.get("stringData") or {}
        ):
            return cond.stalled(reasons.SECRET_KEY_NOT_FOUND, f"{where} has no key {binding.key!r}")
    if (identity := judge_service_account(task.spark_app, inputs.service_account)) is not None:
        return cond.stalled(*identity)
    if not inputs.launcher_served:
        launcher = LAUNCHERS[task.launcher]
        message = (
            f"the cluster does not serve {launcher.API_VERSION} {launcher.PLURAL}: install the "
            f"{task.launcher} Spark operator, or choose the other launcher (spec.runtime.launcher)"
        )
        return cond.stalled(reasons.LAUNCHER_NOT_INSTALLED, message)
    return None


def member_switch(stored_config_map: dict[str, Any] | None, following: Following) -> Note | None:
    """An Event when a followed group switched since the task's config was last written (the config then
    changes and the Spark application restarts on the new member)."""
    if not following.members:
        return None
    text = ((stored_config_map or {}).get("data") or {}).get(TASK_CONFIG_KEY)
    try:
        before = TaskConfig.from_json(text).followed_members if text else {}
    except TaskConfigError:  # edited by hand: drift, which the pass restores
        return None
    if not before or before == following.members:
        return None
    changes = [
        f"{path} uses {member} (was {before.get(path, 'nothing')})"
        for path, member in sorted(following.members.items())
        if before.get(path) != member
    ]
    return Note(
        "Normal", "FollowedMemberSwitched", "; ".join(changes) + ": task re-planned, the app restarts"
    )


# -------------------------------------------------------------------------------------------------- apply


@dataclass(frozen=True)
class Applied:
    config_map: Outcome
    app: Outcome
    stored_app: dict[str, Any]
    """The Spark application as stored after the pass (observed without another read)."""


async def apply(client: KubeClient, planned: PassPlan, inputs: TaskInputs) -> Applied:
    """Create the children, or put back what was changed by hand."""
    config_map, _ = await ensure(client, CONFIGMAPS, planned.task.config_map, inputs.config_map)
    app_ref = ResourceRef(planned.launcher.API_VERSION, planned.launcher.PLURAL)
    app, stored = await ensure(client, app_ref, planned.app, inputs.app)
    return Applied(config_map, app, stored)


# ------------------------------------------------------------------------------------------- status


def findings(planned: PassPlan, applied: Applied, observation: SparkObservation, existed: bool) -> Findings:
    """What the pass did, in Events, and the Spark application's state (`observation`, of the application
    as applied), in conditions and status fields. `existed`: status named an application before this pass."""
    app_name, kind = planned.task.spark_app.name, planned.launcher.KIND
    switch = planned.switch
    # A FailoverGroup switch re-plans the children: announced as such, not as drift.
    notes = [switch] if switch is not None else []
    if applied.config_map is Outcome.RESTORED and switch is None:
        notes.append(
            Note(
                "Warning",
                "DriftCorrected",
                f"ConfigMap {planned.task.spark_app.config_map} was changed; restored",
            )
        )
    if applied.app is Outcome.CREATED and existed:
        notes.append(Note("Warning", "DriftCorrected", f"{kind} {app_name} was deleted; recreated"))
    elif applied.app is Outcome.CREATED:
        notes.append(Note("Normal", "SparkApplicationCreated", f"{kind} {app_name} created"))
    elif applied.app is Outcome.RESTORED and switch is None:
        notes.append(Note("Warning", "DriftCorrected", f"{kind} {app_name} was changed or lost; restored"))
    result = _from_observation(observation, app_name)
    result.notes[:0] = notes
    result.status_fields = {
        "sparkApplication": {
            "apiVersion": planned.launcher.API_VERSION,
            "name": app_name,
            "state": observation.state,
        },
        "activeSourceMember": planned.following.source_member,
    }
    return result


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
    config_map = task_config_map_name(name)
    if await client.delete(CONFIGMAPS.path(namespace, config_map)):
        deleted.append(f"ConfigMap {config_map}")
    return deleted
