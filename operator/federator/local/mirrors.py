"""ServiceBusMirror in local mode. The plan is the operator's (`plan_mirror`); the members' topics and
queues (the user's entities) are laid out in the emulator from the generated tasks' endpoints, but what
the mirror provisions (replication subscriptions and their rules, auxiliary queues) is not: once the
emulator runs, the operator's round (reconcile/servicebusmirror.py) creates it through the emulator's
administration API (ATOM over HTTPS, trusting the CA of the ready file), removing `$Default` and marking
ownership, exactly as on Azure. Its local adapters: Secrets from the environment or the manifest files,
the emulator's management for members in it (others are provisioned as in a cluster), the outcome kept
in the state dir instead of status, and the pairs' tasks started by the session (local/session.py) once
both members of a pair are provisioned."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from federator.local.model import MirrorRun, PlanContext, TaskManifest
from federator.local.observe import TaskRow, task_conditions, triad_row
from federator.local.state import StateDir
from federator.planning.mirror import MirrorPlan, plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome
from federator.provision.model import queue_path, subscription_path
from federator.reconcile.servicebusmirror import MirrorPorts, mirror_round, recorded_outcomes, rollup
from federator.validation.documents import Document
from federator_contract.api.servicebusmirror import MirrorMember, ServiceBusMirrorSpec
from federator_contract.files import write_atomically


def expand_mirror(doc: Document, context: PlanContext) -> list[TaskManifest]:
    """The mirror's generated tasks; the mirror itself is registered for provisioning."""
    mirror = context.controlled(doc, ServiceBusMirrorSpec)
    if mirror is None:
        return []
    plan = plan_mirror(name=mirror.name, namespace=mirror.namespace, spec=mirror.spec)
    run = MirrorRun(mirror.namespace, mirror.name, doc.label, mirror.spec, plan, mirror.secrets)
    context.plan.mirrors.append(run)
    provisioned = provisioned_entities(mirror.spec, plan)
    return [TaskManifest(p.task, run.key, (p.source, p.target), provisioned) for p in plan.pairs]


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
    run: MirrorRun, env_for: Callable[[MirrorMember], ManagementEnvironment], state: StateDir
) -> list[MemberOutcome]:
    """One provisioning round over every member (``env_for``: how a member's management is reached); the
    outcome is kept in the state dir, whose entities are what the next round (or run) looks after."""
    path = state.mirror_dir(run.namespace, run.name) / "status.json"
    found = await mirror_round(
        MirrorPorts(run.secrets, env_for, tasks=None),
        namespace=run.namespace,
        spec=run.spec,
        plan=run.plan,
        previous=recorded_outcomes(_recorded(path)),
        provision=True,
    )
    outcomes = found.outcomes
    status = {"members": [o.status() for o in outcomes], "done": {o.name: list(o.done) for o in outcomes}}
    write_atomically(path, json.dumps(status, indent=2))
    return outcomes


def _recorded(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def mirror_row(run: MirrorRun, outcomes: Sequence[MemberOutcome], tasks: Mapping[str, TaskRow]) -> TaskRow:
    """The mirror's line: the operator's roll-up of members and pairs (Ready once every member is
    provisioned and every pair's task runs), with the pairs' figures summed."""
    pairs = run.plan.pairs
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
