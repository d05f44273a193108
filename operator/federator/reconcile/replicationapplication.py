"""One pass of a ReplicationApplication: gather its member tasks (the ReplicationTasks whose
`spec.runtime.applicationRef` names it) and their task ConfigMaps (labelled for it by the members' own
passes), plan its Spark application from them (planning/application.py), apply it with server-side apply,
observe it, and roll the members up into status: Ready when the Spark application runs and every member
is Ready. Called on create/update/resume and periodically; the handler writes what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from federator import reasons
from federator.apply.children import ApplyConflict, Outcome, ensure
from federator.kube.children import ChildReader
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.kube.resources import (
    CONFIGMAPS,
    FAILOVER_GROUPS,
    REPLICATION_TASKS,
    SERVICE_ACCOUNTS,
    ResourceRef,
)
from federator.observe.sparkapps import observe
from federator.planning.application import (
    ApplicationPlan,
    followed_group_names,
    plan_application,
)
from federator.planning.errors import PlanningError
from federator.planning.launchers import LAUNCHERS, LauncherModule, render_spark_application
from federator.planning.task import APPLICATION_LABEL, TASK_CONFIG_KEY
from federator.reconcile.sparkapp_status import (
    applied_notes,
    delete_spark_applications,
    launcher_not_installed,
    spark_findings,
)
from federator.reconcile.taskpods import judge_service_account
from federator.settings import OperatorSettings
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result, written
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import REPLICATION_APPLICATION
from federator_contract.api.replicationapplication import (
    MAX_LISTED_MEMBERS,
    ApplicationMember,
    ReplicationApplicationSpec,
    ReplicationApplicationStatus,
    SparkApplicationStatus,
)
from federator_contract.taskconfig import TaskConfig, TaskConfigError


@dataclass(frozen=True)
class Member:
    """A member task as its application reports it."""

    name: str
    ready: bool
    stalled: str | None = None
    """`<reason>: <message>` of its Stalled condition when True."""
    reason: str = ""
    """Its Ready reason."""


@dataclass(frozen=True)
class ApplicationInputs:
    members: list[Member]
    """The tasks naming the application, sorted by name."""
    configs: list[TaskConfig]
    """The members' task configs, as their ConfigMaps carry them (a broken one is left out: its task's
    pass puts it back)."""
    launcher_served: bool
    app: dict[str, Any] | None = None
    """The Spark application as stored."""
    service_account: dict[str, Any] | None = field(default=None, repr=False)
    """The pods' ServiceAccount, read only when a member signs in with workload identity."""


@dataclass
class ApplicationMemory:
    """What an application's passes keep between them (the operator's per-object registry)."""

    applied: dict[str, Any] | None = None
    """The Spark application as the last pass planned it: a pass that plans another one updates it (its
    pods changed: it restarts), which is not drift."""


async def reconcile(
    reads: ClusterReads,
    settings: OperatorSettings,
    body: dict[str, Any],
    memory: ApplicationMemory | None = None,
) -> Result:
    """One pass for the application in `body` (its current status included)."""
    memory = memory or ApplicationMemory()
    spec_raw = body.get("spec") or {}
    warnings = spec_warnings(REPLICATION_APPLICATION, spec_raw)
    problems = semantic_problems(REPLICATION_APPLICATION, spec_raw)
    if problems:
        invalid = Findings(cond.stalled(reasons.INVALID_SPEC, "; ".join(str(p) for p in problems)))
        return status_result(body, invalid, warnings)
    spec = ReplicationApplicationSpec.model_validate(spec_raw)
    try:
        found = await _pass(reads, settings, body, spec, memory)
    except ApplyConflict as conflict:  # not overwritten: a human decides who holds the field
        found = Findings(cond.stalled(reasons.FIELD_MANAGER_CONFLICT, str(conflict)))
    return status_result(body, found, warnings)


async def _pass(
    reads: ClusterReads,
    settings: OperatorSettings,
    body: dict[str, Any],
    spec: ReplicationApplicationSpec,
    memory: ApplicationMemory,
) -> Findings:
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    configs = await member_configs(reads.children, namespace, name)
    groups = await followed(reads, namespace, configs)
    try:
        plan = plan_application(
            name=name,
            namespace=namespace,
            spec=spec,
            members=configs,
            settings=settings,
            uid=meta.get("uid"),
            groups=groups,
        )
    except PlanningError as err:
        return _with_members(Findings(cond.stalled(err.reason, err.message)), await _members(reads, meta))
    inputs = await gather(reads, meta, plan, configs)
    module = LAUNCHERS[plan.launcher]
    blocked = preconditions(plan, inputs)
    if blocked is not None:
        return _with_members(Findings(blocked, retry_after=settings.retry_seconds), inputs.members)
    app = render_spark_application(plan.launcher, plan.spark_app)
    ref = ResourceRef(module.API_VERSION, module.PLURAL)
    replanned = memory.applied is not None and memory.applied != app
    outcome, stored = await ensure(reads.client, ref, app, inputs.app)
    reads.children.remember(ref, stored)
    memory.applied = app
    observation = observe(module.API_VERSION, stored)
    status = ReplicationApplicationStatus.model_validate(body.get("status") or {})
    found = spark_findings(observation, name)
    existed = status.spark_application is not None
    found.notes[:0] = applied_notes(module.KIND, name, outcome, existed=existed, announced=replanned)
    if replanned and outcome is Outcome.RESTORED:
        message = (
            f"{module.KIND} {name} updated: its pods changed (the members' Secrets, ConfigMap keys or "
            "checkpoint claims, or the spec), so it restarts with every member's query"
        )
        found.notes.insert(0, Note("Normal", reasons.SPARK_APPLICATION_UPDATED, message))
    if observation.phase == "Running":
        found.condition_updates[:3] = members_conditions(inputs.members)
    found.status_fields = written(
        ReplicationApplicationStatus(
            spark_application=SparkApplicationStatus(
                api_version=module.API_VERSION, name=name, state=observation.state
            )
        )
    )
    return _with_members(found, inputs.members)


async def gather(
    reads: ClusterReads, meta: dict[str, Any], plan: ApplicationPlan, configs: list[TaskConfig]
) -> ApplicationInputs:
    """What the pass decides from, each read once (the Spark application from its watched copy)."""
    namespace, name = meta["namespace"], meta["name"]
    module: LauncherModule = LAUNCHERS[plan.launcher]
    served = await reads.client.serves(module.API_VERSION, module.PLURAL)
    ref = ResourceRef(module.API_VERSION, module.PLURAL)
    app = await reads.children.get(ref, namespace, name) if served else None
    pods = plan.spark_app
    account = (
        await reads.shared.get(SERVICE_ACCOUNTS.path(namespace, pods.service_account))
        if pods.workload_identities
        else None
    )
    return ApplicationInputs(await _members(reads, meta), configs, served, app, account)


async def member_configs(children: ChildReader, namespace: str, application: str) -> list[TaskConfig]:
    """The task configs of the ConfigMaps labelled for the application (their watched copies): what its
    driver runs."""
    configs = []
    for config_map in await children.labelled(CONFIGMAPS, namespace, APPLICATION_LABEL, application):
        try:
            configs.append(TaskConfig.from_json((config_map.get("data") or {}).get(TASK_CONFIG_KEY) or ""))
        except TaskConfigError:  # edited by hand: its task's pass restores it
            continue
    return configs


async def followed(
    reads: ClusterReads, namespace: str, configs: list[TaskConfig]
) -> dict[str, FailoverGroupSpec]:
    """The FailoverGroups the members follow, by name (one that is gone or cannot be read is left out)."""
    found = {}
    for name in followed_group_names(configs):
        group = await reads.client.get(FAILOVER_GROUPS.path(namespace, name))
        try:
            found[name] = FailoverGroupSpec.model_validate((group or {}).get("spec"))
        except ValidationError:
            continue
    return found


async def _members(reads: ClusterReads, meta: dict[str, Any]) -> list[Member]:
    listing = await reads.client.get(REPLICATION_TASKS.path(meta["namespace"])) or {}
    return members_of(meta["name"], listing.get("items") or [])


def members_of(application: str, tasks: list[dict[str, Any]]) -> list[Member]:
    """The tasks (as listed) whose `spec.runtime.applicationRef.name` is ``application``, sorted by name."""
    found = []
    for task in tasks:
        runtime = (task.get("spec") or {}).get("runtime") or {}
        if (runtime.get("applicationRef") or {}).get("name") != application:
            continue
        conditions = (task.get("status") or {}).get("conditions")
        ready, stalled = cond.find(conditions, cond.READY), cond.find(conditions, cond.STALLED)
        blocked = stalled is not None and stalled["status"] == "True"
        found.append(
            Member(
                name=task["metadata"]["name"],
                ready=ready is not None and ready["status"] == "True",
                stalled=f"{stalled['reason']}: {stalled.get('message', '')}" if blocked and stalled else None,
                reason=ready["reason"] if ready else "",
            )
        )
    return sorted(found, key=lambda m: m.name)


def members_conditions(members: list[Member]) -> list[cond.ConditionUpdate]:
    """The triad while the Spark application runs: Ready when every member is."""
    stalled = [f"ReplicationTask {m.name}: {m.stalled}" for m in members if m.stalled]
    if stalled:
        return cond.stalled(reasons.MEMBER_STALLED, "; ".join(stalled))
    pending = [
        f"ReplicationTask {m.name} ({m.reason or 'not reconciled yet'})" for m in members if not m.ready
    ]
    if pending:
        return cond.reconciling(reasons.MEMBERS_PENDING, "waiting for " + "; ".join(pending))
    return cond.ready(reasons.RUNNING, f"the Spark application runs {len(members)} member task(s)")


def preconditions(plan: ApplicationPlan, inputs: ApplicationInputs) -> list[cond.ConditionUpdate] | None:
    """What the application waits for, or None when its Spark application can be applied."""
    if not inputs.launcher_served:
        return launcher_not_installed(plan.launcher, "spec.launcher")
    if (
        identity := judge_service_account(plan.spark_app, inputs.service_account, "spec.serviceAccountName")
    ) is not None:
        return cond.stalled(*identity)
    return None


def _with_members(found: Findings, members: list[Member]) -> Findings:
    listed = [ApplicationMember(name=m.name, ready=m.ready) for m in members[:MAX_LISTED_MEMBERS]]
    found.status_fields.update(
        written(ReplicationApplicationStatus(members=listed, member_count=len(members)))
    )
    return found


async def delete_children(client: KubeClient, body: dict[str, Any]) -> list[str]:
    """Delete the application's Spark application (either launcher's; owner references would too, in
    time). Its members' ConfigMaps are theirs: they stay, and the tasks say their application is gone."""
    meta = body["metadata"]
    name = meta["name"]
    return await delete_spark_applications(client, meta["namespace"], name, APPLICATION_LABEL, name)
