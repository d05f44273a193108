"""One round of a ServiceBusMirror, the same in a cluster and in local mode: provision every member (when
due), apply the generated ReplicationTasks of the pairs whose two members are provisioned, and roll members
and pairs up into honest status. What differs between the two is given as ports (`MirrorPorts`): where
Secrets are read, how each member's management API is reached, and how the pairs' tasks are applied. The
cluster's adapters are here (`reconcile`); local mode's are in local/mirrors.py. Deleting a mirror removes
its tasks and what it provisioned (a cluster only)."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from federator import reasons
from federator.apply.children import ApplyConflict, Outcome, ensure
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.kube.resources import REPLICATION_APPLICATIONS as APPLICATIONS
from federator.kube.resources import REPLICATION_TASKS as TASKS
from federator.planning.mirror import MIRROR_LABEL, MirrorPlan, Pair, plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome, deprovision_member, provision_member
from federator.provision.model import desired_by_member
from federator.provision.secrets import SecretSource
from federator.provision.serviceaccount import NamespaceCredentials
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result, written
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.kinds import SERVICE_BUS_MIRROR
from federator_contract.api.servicebusmirror import (
    MemberStatus,
    MirrorMember,
    PairStatus,
    ServiceBusMirrorSpec,
    ServiceBusMirrorStatus,
)

RULES_PROVISIONED, TASKS_READY = "RulesProvisioned", "TasksReady"


class PairTasks(Protocol):
    """How the tasks of a mirror's pairs are applied."""

    async def apply(
        self, ready: Sequence[Pair], waiting: Sequence[Pair]
    ) -> tuple[dict[str, dict[str, Any] | None], list[Note]]:
        """Apply the tasks of the `ready` pairs (both members provisioned); keep what the `waiting` ones
        have (a transient failure must not stop replication that works). Returns every pair's task as
        stored (by task name; None: none yet) and what was done, in words."""
        ...


@dataclass(frozen=True)
class MirrorPorts:
    """What a mirror round reads and writes through, where a cluster and local mode differ."""

    secrets: SecretSource
    """Where Secrets are read: the API, or in local mode the environment and the manifests' Secrets."""
    management: Callable[[MirrorMember], ManagementEnvironment]
    """How a member's management API is reached: the operator's environment (ARM, TLS trust), or in local
    mode the emulator's for members in it."""
    tasks: PairTasks | None
    """How the pairs' tasks are applied: ReplicationTask objects (`ClusterTasks`). None in local mode,
    whose session starts a pair's Spark application once both its members are provisioned."""


@dataclass(frozen=True)
class MirrorRound:
    findings: Findings
    outcomes: list[MemberOutcome]
    """Each member's provisioning outcome, in the order of the spec's members."""


async def mirror_round(
    ports: MirrorPorts,
    *,
    namespace: str,
    spec: ServiceBusMirrorSpec,
    plan: MirrorPlan,
    previous: Mapping[str, MemberOutcome],
    provision: bool,
) -> MirrorRound:
    """One round. `previous`: the member outcomes the last round recorded (status in a cluster, the state
    dir in local mode); with `provision=False` they are reused instead of re-reading the members, unless
    a member has none."""
    if provision or any(m.name not in previous for m in spec.members):
        desired = desired_by_member(plan, [m.name for m in spec.members])
        outcomes = list(
            await asyncio.gather(
                *(
                    provision_member(
                        ports.secrets,
                        namespace,
                        m,
                        desired[m.name],
                        _entities(previous, m.name),
                        ports.management(m),
                    )
                    for m in spec.members
                )
            )
        )
    else:
        outcomes = [previous[m.name] for m in spec.members]
    notes = [note for outcome in outcomes for note in _provisioning_notes(outcome)]
    tasks: dict[str, dict[str, Any] | None] = {}
    if ports.tasks is not None:
        provisioned = {o.name for o in outcomes if o.state == "Provisioned"}
        ready = [p for p in plan.pairs if {p.source, p.target} <= provisioned]
        try:
            tasks, task_notes = await ports.tasks.apply(ready, [p for p in plan.pairs if p not in ready])
        except ApplyConflict as conflict:  # a pair's task edited by another field manager: not overwritten
            stalled = cond.stalled(reasons.FIELD_MANAGER_CONFLICT, str(conflict))
            return MirrorRound(Findings(stalled), outcomes)
        notes += task_notes
    found = rollup(outcomes, plan.pairs, tasks)
    found.notes[:0] = notes
    return MirrorRound(found, outcomes)


async def reconcile(
    reads: ClusterReads, env: ManagementEnvironment, body: dict[str, Any], *, provision: bool
) -> Result:
    """One round for the mirror in `body`, in a cluster. `provision=False` reuses the member outcomes
    recorded in status (members are re-read every drift interval, not at every status refresh)."""
    meta, spec_raw = body["metadata"], body.get("spec") or {}
    problems = semantic_problems(SERVICE_BUS_MIRROR, spec_raw)
    if problems:
        invalid = Findings(cond.stalled(reasons.INVALID_SPEC, "; ".join(str(p) for p in problems)))
        return status_result(body, invalid, spec_warnings(SERVICE_BUS_MIRROR, spec_raw))
    spec = ServiceBusMirrorSpec.model_validate(spec_raw)
    status = body.get("status") or {}
    plan = cluster_plan(meta, spec)
    # A member's serviceAccount credential has its token requested from the API server (TokenRequest).
    credentials = NamespaceCredentials(reads.secrets, reads.client)
    ports = MirrorPorts(credentials, lambda _: env, ClusterTasks(reads, meta, status, plan.application))
    found = await mirror_round(
        ports,
        namespace=meta["namespace"],
        spec=spec,
        plan=plan,
        previous=recorded_outcomes(status),
        provision=provision,
    )
    return status_result(body, found.findings, spec_warnings(SERVICE_BUS_MIRROR, spec_raw))


def cluster_plan(meta: dict[str, Any], spec: ServiceBusMirrorSpec) -> MirrorPlan:
    """The mirror's plan in a cluster: its tasks share one Spark application (planning/mirror.py)."""
    return plan_mirror(
        name=meta["name"],
        namespace=meta["namespace"],
        spec=spec,
        uid=meta.get("uid"),
        shared_application=True,
    )


def recorded_outcomes(status: Mapping[str, Any]) -> dict[str, MemberOutcome]:
    """The member outcomes a status (a cluster's, or local mode's file) recorded, by member name."""
    return {str(m.get("name")): MemberOutcome.from_status(m) for m in status.get("members") or []}


def _entities(previous: Mapping[str, MemberOutcome], member: str) -> tuple[str, ...]:
    outcome = previous.get(member)
    return outcome.entities if outcome is not None else ()


def _provisioning_notes(outcome: MemberOutcome) -> list[Note]:
    if outcome.drift:
        message = f"member {outcome.name}: {'; '.join(outcome.drift)}; repaired"
        return [Note("Warning", reasons.DRIFT_CORRECTED, message)]
    if outcome.done:
        return [Note("Normal", reasons.PROVISIONED, f"member {outcome.name}: {'; '.join(outcome.done)}")]
    return []


@dataclass(frozen=True)
class ClusterTasks:
    """The pairs' tasks as ReplicationTask objects owned by the mirror."""

    reads: ClusterReads
    meta: dict[str, Any]
    """The mirror's metadata (the owner)."""
    status: dict[str, Any]
    """The mirror's status: pairs that were reported before were created before."""
    application: dict[str, Any] | None = None
    """The ReplicationApplication the mirror owns for its tasks (None: the template names one)."""

    async def apply(
        self, ready: Sequence[Pair], waiting: Sequence[Pair]
    ) -> tuple[dict[str, dict[str, Any] | None], list[Note]]:
        namespace, client, children = self.meta["namespace"], self.reads.client, self.reads.children
        pairs = ServiceBusMirrorStatus.model_validate(self.status).pairs
        reported = {p.task_name for p in pairs if p.reason}
        tasks: dict[str, dict[str, Any] | None] = {}
        notes = await self._apply_application()
        for pair in waiting:
            tasks[pair.task_name] = await children.get(TASKS, namespace, pair.task_name)
        for pair in ready:
            name = pair.task_name
            outcome, written = await ensure(
                client, TASKS, pair.task, await children.get(TASKS, namespace, name)
            )
            children.remember(TASKS, written)
            tasks[name] = written
            if outcome is Outcome.CREATED and name in reported:
                notes.append(
                    Note("Warning", reasons.DRIFT_CORRECTED, f"ReplicationTask {name} was deleted; recreated")
                )
            elif outcome is Outcome.CREATED:
                message = f"ReplicationTask {name} created for {pair.source} → {pair.target}"
                notes.append(Note("Normal", reasons.TASK_CREATED, message))
            elif outcome is Outcome.RESTORED:
                notes.append(
                    Note("Warning", reasons.DRIFT_CORRECTED, f"ReplicationTask {name} was changed; restored")
                )
        planned = {p.task_name for p in [*ready, *waiting]}
        return tasks, notes + await _remove_obsolete_tasks(client, self.meta, planned)

    async def _apply_application(self) -> list[Note]:
        """The mirror's own application before its tasks (they name it); removed once the template names
        another one."""
        namespace, name = self.meta["namespace"], self.meta["name"]
        stored = await self.reads.children.get(APPLICATIONS, namespace, name)
        if self.application is None:
            owned = stored is not None and _owned_by(stored, self.meta)
            if owned and await self.reads.client.delete(APPLICATIONS.path(namespace, name)):
                message = f"ReplicationApplication {name} deleted: the task template names another one"
                return [Note("Normal", reasons.DELETED, message)]
            return []
        outcome, written = await ensure(self.reads.client, APPLICATIONS, self.application, stored)
        self.reads.children.remember(APPLICATIONS, written)
        if outcome is Outcome.CREATED:
            message = f"ReplicationApplication {name} created: the mirror's tasks share its Spark application"
            return [Note("Normal", reasons.APPLICATION_CREATED, message)]
        if outcome is Outcome.RESTORED:
            return [
                Note(
                    "Warning", reasons.DRIFT_CORRECTED, f"ReplicationApplication {name} was changed; restored"
                )
            ]
        return []


async def _owned_tasks(client: KubeClient, meta: dict[str, Any]) -> list[dict[str, Any]]:
    selector = urllib.parse.quote(f"{MIRROR_LABEL}={meta['name']}")
    listing = await client.get(f"{TASKS.path(meta['namespace'])}?labelSelector={selector}") or {}
    return [task for task in listing.get("items") or [] if _owned_by(task, meta)]


def _owned_by(child: dict[str, Any], meta: dict[str, Any]) -> bool:
    uid = meta.get("uid")
    return any(o.get("uid") == uid for o in child["metadata"].get("ownerReferences") or [])


async def _remove_obsolete_tasks(client: KubeClient, meta: dict[str, Any], planned: set[str]) -> list[Note]:
    """Tasks the mirror generated for pairs it no longer has (a member was removed)."""
    notes = []
    for task in await _owned_tasks(client, meta):
        name = task["metadata"]["name"]
        if name not in planned and await client.delete(TASKS.path(meta["namespace"], name)):
            notes.append(
                Note("Normal", reasons.TASK_DELETED, f"ReplicationTask {name} deleted: its pair is gone")
            )
    return notes


def rollup(
    outcomes: Sequence[MemberOutcome], pairs: Sequence[Pair], tasks: Mapping[str, dict[str, Any] | None]
) -> Findings:
    """Members, pairs and conditions. Ready only when every member is provisioned and every pair's task is
    Ready; a member that needs a human, or a stalled task, stalls the mirror (named in the message)."""
    pair_status, pending, failed = [], [], []
    for pair in pairs:
        conditions = ((tasks.get(pair.task_name) or {}).get("status") or {}).get("conditions")
        ready, stalled = cond.find(conditions, cond.READY), cond.find(conditions, cond.STALLED)
        pair_status.append(
            PairStatus(
                source=pair.source,
                target=pair.target,
                task_name=pair.task_name,
                ready=ready["status"] if ready else "Unknown",
                reason=ready["reason"] if ready else "",
            )
        )
        label = f"{pair.source} → {pair.target} (ReplicationTask {pair.task_name})"
        if ready is not None and ready["status"] == "True":
            continue
        if stalled is not None and stalled["status"] == "True":
            failed.append(f"{label}: {stalled['reason']}: {stalled.get('message', '')}".rstrip(": "))
        else:
            pending.append(f"{label}: {ready['reason'] if ready else 'not created yet'}")
    failing = [o for o in outcomes if o.state != "Provisioned"]
    needs_human = [o for o in failing if not o.transient]
    if needs_human:
        updates = cond.stalled(needs_human[0].reason, "; ".join(o.message for o in needs_human))
    elif failing:
        updates = cond.reconciling(reasons.MANAGEMENT_UNAVAILABLE, "; ".join(o.message for o in failing))
    elif failed:
        updates = cond.stalled(reasons.PAIR_FAILED, "pair failed: " + "; ".join(failed))
    elif pending:
        updates = cond.reconciling(reasons.PAIRS_PENDING, "waiting for " + "; ".join(pending))
    else:
        updates = cond.ready(
            reasons.MIRRORING, f"{len(outcomes)} members provisioned, {len(pairs)} pairs replicating"
        )
    if failing:
        rules = cond.ConditionUpdate(
            RULES_PROVISIONED, "False", failing[0].reason, "; ".join(o.message for o in failing)
        )
    else:
        rules = cond.ConditionUpdate(RULES_PROVISIONED, "True", reasons.PROVISIONED, "")
    if failed or pending:
        reason = reasons.PAIR_FAILED if failed else reasons.PAIRS_PENDING
        tasks_ready = cond.ConditionUpdate(TASKS_READY, "False", reason, "; ".join(failed + pending))
    else:
        tasks_ready = cond.ConditionUpdate(TASKS_READY, "True", reasons.PAIRS_READY, "")
    return Findings(
        [*updates, rules, tasks_ready],
        status_fields=written(
            ServiceBusMirrorStatus(
                members=[MemberStatus.model_validate(o.status()) for o in outcomes], pairs=pair_status
            )
        ),
        retry_after=0.0 if failing else None,
    )


@dataclass(frozen=True)
class Deletion:
    deleted: list[str]
    """What was deleted, in words."""
    left: list[MemberOutcome]
    """Members whose entities could not be removed (with why)."""


async def delete_mirror(client: KubeClient, env: ManagementEnvironment, body: dict[str, Any]) -> Deletion:
    """Delete the generated tasks, and on every member what the mirror created (and nothing else)."""
    meta = body["metadata"]
    deleted = []
    for task in await _owned_tasks(client, meta):
        if await client.delete(TASKS.path(meta["namespace"], task["metadata"]["name"])):
            deleted.append(f"ReplicationTask {task['metadata']['name']}")
    path = APPLICATIONS.path(meta["namespace"], meta["name"])
    application = await client.get(path)
    if application is not None and _owned_by(application, meta) and await client.delete(path):
        deleted.append(f"ReplicationApplication {meta['name']}")
    if semantic_problems(SERVICE_BUS_MIRROR, body.get("spec") or {}):
        return Deletion(deleted, [])  # nothing could have been provisioned
    spec = ServiceBusMirrorSpec.model_validate(body["spec"])
    plan = cluster_plan(meta, spec)
    desired = desired_by_member(plan, [m.name for m in spec.members])
    previous = recorded_outcomes(body.get("status") or {})
    outcomes = await asyncio.gather(
        *(
            deprovision_member(
                client, meta["namespace"], m, desired[m.name], _entities(previous, m.name), env
            )
            for m in spec.members
        )
    )
    for outcome in outcomes:
        deleted += [f"member {outcome.name}: {what}" for what in outcome.done]
    return Deletion(deleted, [o for o in outcomes if o.state != "Provisioned"])
