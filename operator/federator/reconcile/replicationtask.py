"""One reconciliation pass of a ReplicationTask, in three steps: gather what it decides from
(replicationtask_inputs.py), plan purely, apply the children; then observe the Spark application (its
driver's own report, and a probe of the source) and say what status and Events follow. Called on
create/update/resume and periodically, so it also corrects drift and keeps status fresh. The handler writes
what it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from federator import reasons
from federator.apply.children import ApplyConflict, Outcome, ensure
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.kube.resources import CONFIGMAPS, ResourceRef
from federator.observe.driver import driver_status_fields
from federator.observe.sparkapps import SparkObservation, failed_driver_pod, observe
from federator.planning.application import application_name
from federator.planning.errors import PlanningError
from federator.planning.follower import hosts_itself, plan_task
from federator.planning.following import Following, followed_groups
from federator.planning.launchers import LAUNCHERS, LauncherModule, render_spark_application
from federator.planning.secrets import SecretBinding, secret_bindings
from federator.planning.task import (
    TASK_LABEL,
    TaskPlan,
    task_arguments,
    task_config_map_name,
)
from federator.reconcile.replicationtask_inputs import TaskInputs, gather, member_switch
from federator.reconcile.replicationtask_member import (
    MemberPassPlan,
    member_outcome,
    plan_member,
    query_report,
    read_application,
)
from federator.reconcile.replicationtask_source import SourceProbes, source_reachable
from federator.reconcile.sparkapp_status import (
    applied_notes,
    delete_spark_applications,
    launcher_not_installed,
    spark_findings,
)
from federator.reconcile.taskpods import judge_checkpoint_claim, judge_service_account
from federator.settings import OperatorSettings
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_field, status_result, written
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.kinds import REPLICATION_TASK
from federator_contract.api.replicationtask import (
    ReplicationTaskSpec,
    ReplicationTaskStatus,
    SparkApplicationStatus,
)
from federator_contract.taskconfig import (
    RESET_POSITIONS_ANNOTATION,
    FollowingSource,
)


@dataclass
class TaskMemory:
    """What a task's passes keep between them (the operator's per-object registry): its spec as parsed and
    its children as planned, with what they were made from. Only a spec change parses again, and only that
    or a switch of a followed group plans again; an observe pass reads, compares and observes."""

    parsed: ParsedAt | None = None
    planned: Planned | None = None


@dataclass(frozen=True)
class ParsedAt:
    """The spec parsed at one generation."""

    generation: int
    parsed: Parsed


@dataclass(frozen=True)
class PlanInputs:
    """What a plan is made from: a change of any of these plans again."""

    generation: int | None
    members: dict[str, str]
    """The followed groups' members the connections use."""
    source: FollowingSource | None
    uid: str | None
    reset_positions: str | None = None
    """The task's federator.io/reset-positions annotation: a new value plans again."""


@dataclass(frozen=True)
class Planned:
    """A task's plan, the Spark application rendered from it, and what both were made from."""

    made_from: PlanInputs
    task: TaskPlan
    app: dict[str, Any]


@dataclass(frozen=True)
class Parsed:
    problems: str
    """Why the spec cannot run, in words; empty when it can."""
    spec: ReplicationTaskSpec | None = None
    followed: tuple[str, ...] = ()
    """The FailoverGroups it follows."""
    warnings: tuple[object, ...] = ()
    """Slips in the spec (validation/warnings.py), posted as Events once per generation."""


async def reconcile(
    reads: ClusterReads,
    settings: OperatorSettings,
    body: dict[str, Any],
    probes: SourceProbes | None = None,
    memory: TaskMemory | None = None,
) -> Result:
    """One pass for the task in `body` (its current status included). With `probes`, the source is probed
    (condition SourceReachable); with `memory`, what the last pass parsed and planned is reused."""
    memory = memory or TaskMemory()
    parsed = parse(body, memory)
    found = await _pass(reads, settings, body, parsed, probes, memory)
    return status_result(body, found, parsed.warnings)


async def _pass(
    reads: ClusterReads,
    settings: OperatorSettings,
    body: dict[str, Any],
    parsed: Parsed,
    probes: SourceProbes | None,
    memory: TaskMemory,
) -> Findings:
    meta = body["metadata"]
    namespace = meta["namespace"]
    if parsed.spec is None:
        return Findings(cond.stalled(reasons.INVALID_SPEC, parsed.problems))
    inputs = await gather(reads, namespace, meta["name"], parsed.spec, settings, parsed.followed)
    application = application_name(parsed.spec)
    planned: PassPlan | MemberPassPlan | Findings
    if application is not None:
        stored = await read_application(reads, namespace, application)
        planned = plan_member(meta, inputs, stored, settings, secret_preconditions)
    else:
        planned = plan(meta, inputs, settings, memory)
    if isinstance(planned, Findings):
        return planned
    # The source is probed while the children are applied (and the driver asked): a probe waits on the
    # network for up to a second even when it fails at once (the SDK's connection set-up), and the pass
    # need not wait twice.
    probing = (
        asyncio.ensure_future(
            source_reachable(inputs.secret_source(namespace), probes, namespace, planned.following.spec)
        )
        if probes is not None
        else None
    )
    try:
        if isinstance(planned, MemberPassPlan):
            found = await member_outcome(reads, settings, body, planned, inputs)
        else:
            found = await _own_outcome(reads, settings, body, planned, inputs)
    except ApplyConflict as conflict:  # not overwritten: a human decides who holds the field
        found = Findings(cond.stalled(reasons.FIELD_MANAGER_CONFLICT, str(conflict)))
    except BaseException:
        if probing is not None:
            probing.cancel()
        raise
    if probing is not None:
        found.condition_updates.append(await probing)
    if planned.checkpoint_volume is not None:
        found.condition_updates.append(planned.checkpoint_volume)
    return found


async def _own_outcome(
    reads: ClusterReads,
    settings: OperatorSettings,
    body: dict[str, Any],
    planned: PassPlan,
    inputs: TaskInputs,
) -> Findings:
    """Apply a task's own children and observe its Spark application."""
    meta = body["metadata"]
    applied = await apply(reads, planned, inputs)
    api_version, stored = planned.launcher.API_VERSION, applied.stored_app
    driver = await failed_driver_pod(reads.client, meta["namespace"], api_version, stored)
    observation = observe(api_version, stored, driver)
    existed = status_field(ReplicationTaskStatus, body.get("status"), "spark_application") is not None
    found = findings(planned, applied, observation, existed=existed)
    if observation.phase != "Running":
        return found
    namespace, name, port = meta["namespace"], meta["name"], settings.app_metrics_port
    if hosts_itself(planned.task):  # its own host: the task's document and its query's state
        host = f"the task's own host (Spark application {name})"
        await query_report(reads.client, found, namespace, name, name, port, host)
    else:  # counts, lag per partition and translation, from the driver
        found.status_fields.update(await driver_status_fields(reads.client, namespace, name, port))
    return found


def parse(body: dict[str, Any], memory: TaskMemory) -> Parsed:
    """The spec checked (schema, CEL rules, semantics) and parsed, once per generation."""
    generation = body["metadata"].get("generation")
    if memory.parsed is not None and generation is not None and memory.parsed.generation == generation:
        return memory.parsed.parsed
    spec_raw = body.get("spec") or {}
    problems = semantic_problems(REPLICATION_TASK, spec_raw)
    warnings = tuple(spec_warnings(REPLICATION_TASK, spec_raw))
    if problems:
        found = Parsed("; ".join(str(p) for p in problems), warnings=warnings)
    else:
        spec = ReplicationTaskSpec.model_validate(spec_raw)
        found = Parsed("", spec, tuple(followed_groups(spec)), warnings)
    if generation is not None:
        memory.parsed = ParsedAt(generation, found)
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


def plan(
    meta: dict[str, Any], inputs: TaskInputs, settings: OperatorSettings, memory: TaskMemory
) -> PassPlan | Findings:
    """The children to apply, or why the task waits (Reconciling) or cannot run (Stalled). Pure but for
    `memory`, which keeps the last plan for the next pass."""
    try:
        if isinstance(inputs.following, PlanningError):
            raise inputs.following
        following = inputs.following
        annotations = meta.get("annotations") or {}
        made_from = PlanInputs(
            meta.get("generation"),
            following.members,
            following.source,
            meta.get("uid"),
            annotations.get(RESET_POSITIONS_ANNOTATION),
        )
        kept = memory.planned
        if kept is not None and made_from.generation is not None and kept.made_from == made_from:
            task, app = kept.task, kept.app
        else:
            task = plan_task(**task_arguments(meta, following, settings))
            app = render_spark_application(task.launcher, task.spark_app)
            memory.planned = Planned(made_from, task, app)
    except PlanningError as err:
        if err.reason in (reasons.FAILOVER_GROUP_PENDING, reasons.FAILOVER_GROUP_NOT_FOUND):
            waiting = cond.reconciling if err.reason == reasons.FAILOVER_GROUP_PENDING else cond.stalled
            return Findings(waiting(err.reason, err.message), retry_after=settings.retry_seconds)
        return Findings(cond.stalled(err.reason, err.message))
    blocked = _preconditions(task, inputs, meta["namespace"])
    if blocked is not None:
        return Findings(blocked, retry_after=settings.retry_seconds)
    pods, claim = task.spark_app, inputs.checkpoint_claim
    where = f"{pods.namespace}/{pods.checkpoint_pvc.claim_name}" if pods.checkpoint_pvc else None
    shared = judge_checkpoint_claim(where, pods.executor_instances, claim) if where else None
    restarts = "its query restarts in its own host" if hosts_itself(task) else "the app restarts"
    switch = member_switch(inputs.config_map, following, restarts)
    return PassPlan(task, following, LAUNCHERS[task.launcher], app, switch, shared)


def _preconditions(task: TaskPlan, inputs: TaskInputs, namespace: str) -> list[cond.ConditionUpdate] | None:
    """What the task waits for, or None when it can run: the Secrets of the members used now (its own
    host's pods carry every member's, optional for the kubelet)."""
    missing = secret_preconditions(secret_bindings(task.task_config.spec), inputs, namespace)
    if missing is not None:
        return missing
    if (identity := judge_service_account(task.spark_app, inputs.service_account)) is not None:
        return cond.stalled(*identity)
    if not inputs.launcher_served:
        return launcher_not_installed(task.launcher, "spec.runtime.launcher")
    return None


def secret_preconditions(
    bindings: Sequence[SecretBinding], inputs: TaskInputs, namespace: str
) -> list[cond.ConditionUpdate] | None:
    """Stalled when a Secret key the task's pods read does not exist; None when all do."""
    for binding in bindings:
        secret = inputs.secrets.get(binding.secret_name)
        where = f"Secret {namespace}/{binding.secret_name}"
        if secret is None:
            message = f"{where} does not exist; create it with key {binding.key!r}"
            return cond.stalled(reasons.SECRET_NOT_FOUND, message)
        if binding.key not in (secret.get("data") or {}) and binding.key not in (
            secret.get("stringData") or {}
        ):
            return cond.stalled(reasons.SECRET_KEY_NOT_FOUND, f"{where} has no key {binding.key!r}")
    return None


# -------------------------------------------------------------------------------------------------- apply


@dataclass(frozen=True)
class Applied:
    config_map: Outcome
    app: Outcome
    stored_app: dict[str, Any]
    """The Spark application as stored after the pass (observed without another read)."""


async def apply(reads: ClusterReads, planned: PassPlan, inputs: TaskInputs) -> Applied:
    """Create the children, or put back what was changed by hand."""
    client, children = reads.client, reads.children
    config_map, stored_config_map = await ensure(
        client, CONFIGMAPS, planned.task.config_map, inputs.config_map
    )
    children.remember(CONFIGMAPS, stored_config_map)
    app_ref = ResourceRef(planned.launcher.API_VERSION, planned.launcher.PLURAL)
    app, stored_app = await ensure(client, app_ref, planned.app, inputs.app)
    children.remember(app_ref, stored_app)
    return Applied(config_map, app, stored_app)


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
                reasons.DRIFT_CORRECTED,
                f"ConfigMap {planned.task.config_map['metadata']['name']} was changed; restored",
            )
        )
    notes += applied_notes(kind, app_name, applied.app, existed, announced=switch is not None)
    result = spark_findings(observation, app_name)
    result.notes[:0] = notes
    app = SparkApplicationStatus(
        api_version=planned.launcher.API_VERSION, name=app_name, state=observation.state
    )
    result.status_fields = written(
        ReplicationTaskStatus(spark_application=app, active_source_member=planned.following.source_member)
    )
    return result


async def delete_children(client: KubeClient, body: dict[str, Any]) -> list[str]:
    """Delete what the task created (owner references would, but not every cluster collects garbage
    promptly, and a finalizer makes deletion observable). Returns what was deleted."""
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    # Only the task's own: a shared application of the same name is the application's.
    deleted = await delete_spark_applications(client, namespace, name, TASK_LABEL, name)
    config_map = task_config_map_name(name)
    if await client.delete(CONFIGMAPS.path(namespace, config_map)):
        deleted.append(f"ConfigMap {config_map}")
    return deleted
