"""ServiceBusMirror in local mode. The plan is the operator's (`plan_mirror`); the members' topics and
queues (the user's entities) are laid out in the emulator from the generated tasks' endpoints, but what
the mirror provisions (replication subscriptions and their rules, auxiliary queues) is not: once the
emulator runs, the operator's provisioning code (provision/members.py) creates it through the emulator's
administration API (ATOM over HTTPS, trusting the CA of the ready file), removing `$Default` and marking
ownership, exactly as on Azure. Members outside the emulator are provisioned as in a cluster (their
Secrets from the environment or the manifest files). A generated task starts once both members of its
pair are provisioned."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from federator.local.model import MirrorRun, PlanContext, TaskManifest
from federator.local.observe import TaskRow, task_conditions, triad_row
from federator.local.state import StateDir
from federator.planning.mirror import MirrorPlan, plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome, provision_member
from federator.provision.model import desired_by_member, queue_path, subscription_path
from federator.reconcile.servicebusmirror import pairs_of, rollup
from federator.validation.documents import Document
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.files import write_atomically


def expand_mirror(doc: Document, context: PlanContext) -> list[TaskManifest]:
    """The mirror's generated tasks; the mirror itself is registered for provisioning."""
    meta = doc.body["metadata"]
    namespace, name = meta.get("namespace") or "default", meta["name"]
    spec = ServiceBusMirrorSpec.model_validate(doc.body["spec"])
    secrets = context.resolve_secrets(doc.label, namespace, spec)
    if secrets is None:
        return []
    plan = plan_mirror(name=name, namespace=namespace, spec=spec)
    run = MirrorRun(namespace, name, doc.label, spec, plan, secrets)
    context.plan.mirrors.append(run)
    provisioned = provisioned_entities(spec, plan)
    pairs = {p.task_name: (p.source, p.target) for p in pairs_of(plan, spec, name)}
    return [TaskManifest(task, run.key, pairs[task["metadata"]["name"]], provisioned) for task in plan.tasks]


def provisioned_entities(spec: ServiceBusMirrorSpec, plan: MirrorPlan) -> frozenset[tuple[str, str]]:
    """(emulator namespace, entity path) of everything the mirror creates on its emulator members."""
    emulators = {m.name: m.connection.emulator.namespace for m in spec.members if m.connection.emulator}
    found = {
        (emulators[s.member], subscription_path(s.topic, s.name))
        for s in plan.subscriptions
        if s.member in emulators
    }
    found |= {(emulators[q.member], queue_path(q.name)) for q in plan.queues if q.member in emulators}
    return frozenset(found)


async def provision(
    run: MirrorRun, env_for: Callable[[str], ManagementEnvironment], state: StateDir
) -> list[MemberOutcome]:
    """One provisioning pass over every member (``env_for``: how a member's management is reached); the
    outcome is kept in the state dir, whose entities are what the next pass (or run) looks after."""
    path = state.mirror_dir(run.namespace, run.name) / "status.json"
    recorded = _recorded(path)
    desired = desired_by_member(run.plan, [m.name for m in run.spec.members])
    outcomes = list(
        await asyncio.gather(
            *(
                provision_member(
                    run.secrets, run.namespace, m, desired[m.name], recorded.get(m.name, ()), env_for(m.name)
                )
                for m in run.spec.members
            )
        )
    )
    status = {"members": [o.status() for o in outcomes], "done": {o.name: list(o.done) for o in outcomes}}
    write_atomically(path, json.dumps(status, indent=2))
    return outcomes


def _recorded(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return {str(m.get("name")): tuple(m.get("entities") or ()) for m in raw.get("members") or []}


def mirror_row(run: MirrorRun, outcomes: Sequence[MemberOutcome], tasks: Mapping[str, TaskRow]) -> TaskRow:
    """The mirror's line: the operator's roll-up of members and pairs (Ready once every member is
    provisioned and every pair's task runs), with the pairs' figures summed."""
    pairs = pairs_of(run.plan, run.spec, run.name)
    rows = {p.task_name: tasks.get(f"{run.namespace}/{p.task_name}") for p in pairs}
    found = rollup(
        list(outcomes),
        pairs,
        {name: task_conditions(row) if row else None for name, row in rows.items()},
    )
    running = [r for r in rows.values() if r is not None and r.replicated is not None]
    provisioned = [o.name for o in outcomes if o.state == "Provisioned"]
    ready = [p for p in pairs if (row := rows[p.task_name]) is not None and row.condition == "Ready"]
    info = (
        f"members provisioned: {', '.join(provisioned) or 'none'} of {len(outcomes)}; "
        f"pairs running: {len(ready)} of {len(pairs)} "
        f"({', '.join(f'{p.source}→{p.target}' for p in pairs)})"
    )
    return triad_row(
        f"mirror {run.key}",
        found.condition_updates,
        info=info,
        replicated=sum(r.replicated or 0 for r in running) if running else None,
        dead_lettered=sum(r.dead_lettered or 0 for r in running) if running else None,
    )
