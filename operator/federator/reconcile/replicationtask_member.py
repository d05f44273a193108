"""A ReplicationTask that runs in a shared application (`spec.runtime.applicationRef`): its pass plans and
applies its task ConfigMap only, labelled for the application's driver (planning/application.py), removes
a Spark application of its own left from before it joined, and reports the shared application's state as
its own — driver down, every member says so with the reason — and, while it runs, whether the driver runs
the member's query (its `/status` listing), with its counts and lag from the member's own document
(`/tasks/<namespace>/<task>/status`). The rest of the pass (parsing, inputs, the source probe) is the
task's (replicationtask.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federator import reasons
from federator.apply.children import Outcome, ensure
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.kube.resources import CONFIGMAPS, REPLICATION_APPLICATIONS, ResourceRef
from federator.observe.driver import member_report
from federator.observe.sparkapps import observe
from federator.planning.application import MemberPlan, missing_application, plan_member_task
from federator.planning.errors import PlanningError
from federator.planning.following import Following
from federator.planning.launchers import LAUNCHERS
from federator.planning.secrets import SecretBinding, secret_bindings
from federator.planning.task import TASK_LABEL, task_arguments
from federator.reconcile.replicationtask_inputs import TaskInputs, member_switch
from federator.reconcile.sparkapp_status import spark_findings
from federator.settings import Launcher, OperatorSettings
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, written
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskStatus, SparkApplicationStatus
from federator_contract.driverstatus import TASK_FAILED, TASK_RUNNING

SecretCheck = Callable[[Sequence[SecretBinding], TaskInputs, str], list[cond.ConditionUpdate] | None]


@dataclass(frozen=True)
class MemberPassPlan:
    member: MemberPlan
    following: Following
    launcher: Launcher
    """The application's launcher, whose Spark application the member reports."""
    switch: Note | None = None
    """A followed group switched since the ConfigMap was written: the member's query restarts on it."""
    checkpoint_volume: cond.ConditionUpdate | None = None
    """A member's claim is judged by its application's pass; not here."""


async def read_application(reads: ClusterReads, namespace: str, name: str) -> dict[str, Any] | None:
    """The ReplicationApplication a member names, as stored (None: it does not exist)."""
    return await reads.client.get(REPLICATION_APPLICATIONS.path(namespace, name))


def plan_member(
    meta: dict[str, Any],
    inputs: TaskInputs,
    application: dict[str, Any] | None,
    settings: OperatorSettings,
    missing_secret: SecretCheck,
) -> MemberPassPlan | Findings:
    """The member's ConfigMap, or why it waits or cannot run. ``missing_secret`` judges the Secrets it
    reads (replicationtask.py: `secret_preconditions`)."""
    try:
        if isinstance(inputs.following, PlanningError):
            raise inputs.following
        following = inputs.following
        member = plan_member_task(**task_arguments(meta, following, settings))
        if application is None:
            raise missing_application(member.application)
    except PlanningError as err:
        waits = err.reason in (reasons.FAILOVER_GROUP_PENDING, reasons.FAILOVER_GROUP_NOT_FOUND)
        waiting = cond.reconciling if err.reason == reasons.FAILOVER_GROUP_PENDING else cond.stalled
        retry = settings.retry_seconds if waits or err.reason == reasons.APPLICATION_NOT_FOUND else None
        return Findings(waiting(err.reason, err.message), retry_after=retry)
    blocked = missing_secret(secret_bindings(following.spec), inputs, meta["namespace"])
    if blocked is not None:
        return Findings(blocked, retry_after=settings.retry_seconds)
    spec = ReplicationApplicationSpec.model_validate((application or {}).get("spec") or {})
    switch = member_switch(inputs.config_map, following, "its query restarts in the shared application")
    return MemberPassPlan(member, following, spec.launcher or settings.launcher, switch)


async def member_outcome(
    reads: ClusterReads,
    settings: OperatorSettings,
    body: dict[str, Any],
    planned: MemberPassPlan,
    inputs: TaskInputs,
) -> Findings:
    """Apply the member's ConfigMap, remove a Spark application of its own, and report the shared one."""
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    client, children = reads.client, reads.children
    outcome, stored = await ensure(client, CONFIGMAPS, planned.member.config_map, inputs.config_map)
    children.remember(CONFIGMAPS, stored)
    # A FailoverGroup switch re-plans the ConfigMap: announced as such, not as drift.
    notes = [planned.switch] if planned.switch is not None else []
    if outcome is Outcome.RESTORED and planned.switch is None:
        notes.append(
            Note(
                "Warning",
                reasons.DRIFT_CORRECTED,
                f"ConfigMap {stored['metadata']['name']} was changed; restored",
            )
        )
    notes += await _remove_own_application(reads, namespace, name, planned.member.application)
    application = planned.member.application
    module = LAUNCHERS[planned.launcher]
    app_ref = ResourceRef(module.API_VERSION, module.PLURAL)
    shared = (
        await children.get(app_ref, namespace, application)
        if await client.serves(module.API_VERSION, module.PLURAL)
        else None
    )
    observation = observe(module.API_VERSION, shared)
    found = spark_findings(observation, application, where=f"of ReplicationApplication {application}")
    found.notes[:0] = notes
    status = SparkApplicationStatus(api_version=module.API_VERSION, name=application, state=observation.state)
    found.status_fields = written(
        ReplicationTaskStatus(spark_application=status, active_source_member=planned.following.source_member)
    )
    if observation.phase == "Running":
        driver = f"the driver of ReplicationApplication {application}"
        await query_report(client, found, namespace, application, name, settings.app_metrics_port, driver)
    return found


async def query_report(
    client: KubeClient,
    found: Findings,
    namespace: str,
    application: str,
    task: str,
    port: int,
    driver: str,
) -> None:
    """Into ``found``: the task's status fields from its own document at the running host of
    ``application`` (its pods' `federator.io/application` label) and the triad from its query's state;
    nothing when no driver answers (the Spark application's state is all there is to say). ``driver``
    names the host in the conditions' messages."""
    report = await member_report(client, namespace, application, task, port)
    if report is not None:
        found.status_fields.update(report.fields)
        found.condition_updates[:3] = query_conditions(driver, report.query)


def query_conditions(driver: str, query: Mapping[str, Any] | None) -> list[cond.ConditionUpdate]:
    """The triad from the task's entry in its running ``driver``'s `/status` listing (None: not listed)."""
    state = (query or {}).get("state")
    if state == TASK_RUNNING:
        return cond.ready(reasons.RUNNING, f"{driver} runs the task's query")
    if state == TASK_FAILED:
        error = (query or {}).get("message") or (query or {}).get("reason") or "no message"
        return cond.reconciling(
            reasons.QUERY_FAILED,
            f"the task's query failed in {driver}: {error}; it starts again after a backoff",
        )
    return cond.reconciling(reasons.QUERY_STARTING, f"{driver} has not started the task's query yet")


async def _remove_own_application(
    reads: ClusterReads, namespace: str, name: str, application: str
) -> list[Note]:
    """A task that joined an application stops its own Spark application (either launcher's): the one
    labelled as the task's, never an application's of the same name."""
    notes = []
    for module in LAUNCHERS.values():
        ref = ResourceRef(module.API_VERSION, module.PLURAL)
        if not await reads.client.serves(module.API_VERSION, module.PLURAL):
            continue
        own = await reads.children.get(ref, namespace, name)
        if ((own or {}).get("metadata") or {}).get("labels", {}).get(TASK_LABEL) != name:
            continue
        if await reads.client.delete(ref.path(namespace, name)):
            message = f"{module.KIND} {name} deleted: the task runs in ReplicationApplication {application}"
            notes.append(Note("Normal", reasons.DELETED, message))
    return notes
