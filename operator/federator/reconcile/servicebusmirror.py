"""One reconciliation pass of a ServiceBusMirror: provision every member (when due), keep the generated
ReplicationTasks as planned, and roll members and pairs up into honest status. Returns what to write and
say; the handler does that. Deleting a mirror removes its tasks and what it provisioned."""

from __future__ import annotations

import asyncio
import urllib.parse
from dataclasses import dataclass
from typing import Any

from federator import reasons
from federator.apply.children import Outcome, ensure
from federator.kube.client import KubeClient, ResourceRef
from federator.planning.mirror import MirrorPlan, plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome, deprovision_member, provision_member
from federator.provision.model import desired_by_member
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.base import API_VERSION
from federator_contract.api.kinds import SERVICE_BUS_MIRROR
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec

TASKS = ResourceRef(API_VERSION, "replicationtasks")
MIRROR_LABEL = "federator.io/servicebusmirror"
RULES_PROVISIONED, TASKS_READY = "RulesProvisioned", "TasksReady"


@dataclass(frozen=True)
class Pair:
    """One generated ReplicationTask and the members it copies between."""

    source: str
    target: str
    task: dict[str, Any]

    @property
    def task_name(self) -> str:
        return str(self.task["metadata"]["name"])


async def reconcile(
    client: KubeClient, env: ManagementEnvironment, body: dict[str, Any], *, provision: bool
) -> Result:
    """One pass for the mirror in `body`. `provision=False` reuses the member outcomes recorded in status
    (members are re-read every drift interval, not at every status refresh)."""
    found = await _pass(client, env, body, provision)
    return status_result(body, found, spec_warnings(SERVICE_BUS_MIRROR, body.get("spec")))


async def _pass(
    client: KubeClient, env: ManagementEnvironment, body: dict[str, Any], provision: bool
) -> Findings:
    meta, spec_raw = body["metadata"], body.get("spec") or {}
    problems = semantic_problems(SERVICE_BUS_MIRROR, spec_raw)
    if problems:
        return Findings(cond.stalled(reasons.INVALID_SPEC, "; ".join(str(p) for p in problems)))
    spec = ServiceBusMirrorSpec.model_validate(spec_raw)
    namespace = meta["namespace"]
    plan = plan_mirror(name=meta["name"], namespace=namespace, spec=spec, uid=meta.get("uid"))
    status = body.get("status") or {}
    previous = {m.get("name"): MemberOutcome.from_status(m) for m in status.get("members") or []}
    desired = desired_by_member(plan, [m.name for m in spec.members])
    if provision or any(m.name not in previous for m in spec.members):
        outcomes = list(
            await asyncio.gather(
                *(
                    provision_member(client, namespace, m, desired[m.name], _entities(previous, m.name), env)
                    for m in spec.members
                )
            )
        )
    else:
        outcomes = [previous[m.name] for m in spec.members]
    notes = [note for outcome in outcomes for note in _provisioning_notes(outcome)]
    pairs = pairs_of(plan, spec, meta["name"])
    tasks, task_notes = await _ensure_tasks(client, namespace, pairs, outcomes, status)
    task_notes += await _remove_obsolete_tasks(client, meta, {p.task_name for p in pairs})
    found = rollup(outcomes, pairs, tasks)
    found.notes[:0] = notes + task_notes
    return found


def _entities(previous: dict[Any, MemberOutcome], member: str) -> tuple[str, ...]:
    outcome = previous.get(member)
    return outcome.entities if outcome is not None else ()


def pairs_of(plan: MirrorPlan, spec: ServiceBusMirrorSpec, mirror: str) -> list[Pair]:
    """The source and target member of each generated task: the source is the member whose connection the
    task reads from; the target is named by the task's target (topic patterns) or is the other member
    (spillover pairs exactly two)."""
    members = [
        (m.name, m.connection.model_dump(by_alias=True, exclude_none=True, mode="json")) for m in spec.members
    ]
    names = [name for name, _ in members]
    pairs = []
    for task in plan.tasks:
        source_connection = task["spec"]["source"]["serviceBus"]["connection"]
        candidates = [name for name, connection in members if connection == source_connection]
        if len(candidates) > 1:  # members sharing a connection: the task's name says which
            candidates = [c for c in candidates if task["metadata"]["name"].startswith(f"{mirror}-{c}-")]
        source = candidates[0]
        named = task["spec"]["targets"][0]["name"]
        target = named if named in names else next(n for n in names if n != source)
        pairs.append(Pair(source, target, task))
    return pairs


def _provisioning_notes(outcome: MemberOutcome) -> list[Note]:
    if outcome.drift:
        message = f"member {outcome.name}: {'; '.join(outcome.drift)}; repaired"
        return [Note("Warning", "DriftCorrected", message)]
    if outcome.done:
        return [Note("Normal", "Provisioned", f"member {outcome.name}: {'; '.join(outcome.done)}")]
    return []


async def _ensure_tasks(
    client: KubeClient,
    namespace: str,
    pairs: list[Pair],
    outcomes: list[MemberOutcome],
    status: dict[str, Any],
) -> tuple[dict[str, dict[str, Any] | None], list[Note]]:
    """Create or restore the task of every pair whose two members are provisioned; a pair waiting on a
    member keeps the task it has (a transient failure must not stop replication that works)."""
    ready_members = {o.name for o in outcomes if o.state == "Provisioned"}
    reported = {p.get("taskName") for p in status.get("pairs") or [] if p.get("reason")}
    tasks: dict[str, dict[str, Any] | None] = {}
    notes = []
    for pair in pairs:
        name = pair.task_name
        if pair.source not in ready_members or pair.target not in ready_members:
            tasks[name] = await client.get(TASKS.path(namespace, name))
            continue
        outcome, tasks[name] = await ensure(client, TASKS, pair.task)
        if outcome is Outcome.CREATED and name in reported:
            notes.append(Note("Warning", "DriftCorrected", f"ReplicationTask {name} was deleted; recreated"))
        elif outcome is Outcome.CREATED:
            message = f"ReplicationTask {name} created for {pair.source} → {pair.target}"
            notes.append(Note("Normal", "TaskCreated", message))
        elif outcome is Outcome.RESTORED:
            notes.append(Note("Warning", "DriftCorrected", f"ReplicationTask {name} was changed; restored"))
    return tasks, notes


async def _owned_tasks(client: KubeClient, meta: dict[str, Any]) -> list[dict[str, Any]]:
    selector = urllib.parse.quote(f"{MIRROR_LABEL}={meta['name']}")
    listing = await client.get(f"{TASKS.path(meta['namespace'])}?labelSelector={selector}") or {}
    uid = meta.get("uid")
    return [
        task
        for task in listing.get("items") or []
        if any(o.get("uid") == uid for o in task["metadata"].get("ownerReferences") or [])
    ]


async def _remove_obsolete_tasks(client: KubeClient, meta: dict[str, Any], planned: set[str]) -> list[Note]:
    """Tasks the mirror generated for pairs it no longer has (a member was removed)."""
    notes = []
    for task in await _owned_tasks(client, meta):
        name = task["metadata"]["name"]
        if name not in planned and await client.delete(TASKS.path(meta["namespace"], name)):
            notes.append(Note("Normal", "TaskDeleted", f"ReplicationTask {name} deleted: its pair is gone"))
    return notes


def rollup(
    outcomes: list[MemberOutcome], pairs: list[Pair], tasks: dict[str, dict[str, Any] | None]
) -> Findings:
    """Members, pairs and conditions. Ready only when every member is provisioned and every pair's task is
    Ready; a member that needs a human, or a stalled task, stalls the mirror (named in the message)."""
    pair_status, pending, failed = [], [], []
    for pair in pairs:
        conditions = ((tasks.get(pair.task_name) or {}).get("status") or {}).get("conditions")
        ready, stalled = cond.find(conditions, cond.READY), cond.find(conditions, cond.STALLED)
        pair_status.append(
            {
                "source": pair.source,
                "target": pair.target,
                "taskName": pair.task_name,
                "ready": ready["status"] if ready else "Unknown",
                "reason": ready["reason"] if ready else "",
            }
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
        status_fields={"members": [o.status() for o in outcomes], "pairs": pair_status},
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
    if semantic_problems(SERVICE_BUS_MIRROR, body.get("spec") or {}):
        return Deletion(deleted, [])  # nothing could have been provisioned
    spec = ServiceBusMirrorSpec.model_validate(body["spec"])
    plan = plan_mirror(name=meta["name"], namespace=meta["namespace"], spec=spec, uid=meta.get("uid"))
    desired = desired_by_member(plan, [m.name for m in spec.members])
    previous = {
        m.get("name"): MemberOutcome.from_status(m) for m in (body.get("status") or {}).get("members") or []
    }
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
