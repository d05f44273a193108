"""`kubectl federator failover|failback`: plan the switch (pure), show it, ask, write the request, then
follow the group until the switch completed or failed.

The request is one merge patch of the desired state: `spec.activeMember` and a new `spec.switchRequest`
(the time), which the operator takes as a new request whatever the group's history (an automatic failover
overrides the request in force; docs/patterns/failover.md). Sending it again is harmless.

`--planned` / `--forced` set `spec.switching.planned` in the same patch (the group keeps that mode for
later switches, as a GitOps change of the field would); a planned switch already waiting for the
replication to catch up is forced that way too."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from federator.kube.client import MERGE_PATCH
from federator.kubectl import output
from federator.kubectl.cluster import Cluster, PluginError, ref_of
from federator.kubectl.failover_follow import follow
from federator.kubectl.model import (
    Obj,
    condition,
    endpoints,
    following_groups,
    group_status,
    lag_of,
    meta,
    spec_of,
)
from federator.status.conditions import timestamp
from federator_contract.api.failovergroup import FailoverGroupStatus
from federator_contract.api.kinds import BY_KIND

GROUPS = ref_of(BY_KIND["FailoverGroup"])
TASKS = ref_of(BY_KIND["ReplicationTask"])


class NothingToDo(Exception):
    """The group already is where it was asked to go."""


@dataclass(frozen=True)
class Patch:
    """The request: a merge patch of the group's spec."""

    body: Any
    describe: str
    content_type: str = MERGE_PATCH


@dataclass(frozen=True)
class TaskChange:
    name: str
    roles: str
    """`source`, `targets` or `source+targets`: which side follows the group."""
    before: str
    after: str
    lag_seconds: float | None


@dataclass
class SwitchPlan:
    namespace: str
    group: str
    mode: str
    primary: str
    target: str
    failback: bool
    producer: str
    consumer: str
    endpoints: dict[str, str]
    patch: Patch
    tasks: list[TaskChange] = field(default_factory=list)
    into_target: list[tuple[str, float | None, datetime | None]] = field(default_factory=list)
    """Tasks that replicate into the target member: (name, lag seconds, last batch time)."""
    warnings: list[str] = field(default_factory=list)
    planned: bool = False
    """Whether the switch waits for the replication into the target to catch up (after the patches)."""
    planned_timeout_seconds: int = 300
    estimate: tuple[int | None, float | None] | None = None
    """What a switch now leaves behind, from `status.replication` (events, seconds); None: not measured."""
    drain_timeout_seconds: int = 600
    period_seconds: int = 10


def plan_switch(
    group: Obj,
    member: str | None,
    tasks: list[Obj],
    planned: bool | None = None,
    now: datetime | None = None,
) -> SwitchPlan:
    """What switching `group` to `member` (None: the primary) takes and changes; `planned` True/False asks
    for a planned/forced switch (None: the group's `spec.switching`); `now` names the request. Raises
    NothingToDo, or PluginError when the switch cannot be requested."""
    ns, name = meta(group)
    spec, status = spec_of(group), group_status(group)
    members = {str(m.get("name")): m for m in spec.get("members") or []}
    primary = str(spec.get("primaryMember"))
    target = member or primary
    if target not in members:
        raise PluginError(f"{target!r} is not a member of FailoverGroup {name}: {', '.join(members)}")
    producer, consumer = status.producer_member, status.consumer_member
    if not producer or not consumer:
        raise PluginError(
            f"FailoverGroup {name} has no producer/consumer member in its status yet: the operator has not "
            "reconciled it (is it running? `kubectl federator status fg/" + name + "`)"
        )
    if producer == consumer == target:
        raise NothingToDo(f"FailoverGroup {name}: producers and consumers already use {target}")
    switching = spec.get("switching") or {}
    configured = bool(switching.get("planned", False))
    plan = SwitchPlan(
        namespace=ns,
        group=name,
        mode=str(spec.get("mode", "manual")),
        primary=primary,
        target=target,
        failback=target == primary,
        producer=str(producer),
        consumer=str(consumer),
        endpoints={n: str(m.get("endpoint", "")) for n, m in members.items()},
        patch=_patch(
            spec,
            target,
            (group.get("metadata") or {}).get("resourceVersion"),
            None if planned is None or planned == configured else planned,
            now or datetime.now(UTC),
        ),
        planned=configured if planned is None else planned,
        planned_timeout_seconds=int(switching.get("plannedTimeoutSeconds", 300)),
        estimate=_estimate(status, target),
        drain_timeout_seconds=int((spec.get("failback") or {}).get("drainTimeoutSeconds", 600)),
        period_seconds=int((spec.get("probe") or {}).get("periodSeconds", 10)),
    )
    plan.tasks = _task_changes(name, tasks, plan)
    plan.into_target = _replicating_into(members[target], tasks)
    plan.warnings = _warnings(group, target)
    return plan


def _patch(spec: Obj, target: str, version: str | None, planned: bool | None, now: datetime) -> Patch:
    """The request: the member, a new `switchRequest` (so it is a request whatever the group did since
    the last one), and a change of `spec.switching.planned` when `planned` is not None. The resource
    version makes it apply to the group the plan was made from."""
    mode = {} if planned is None else {"switching": {"planned": planned}}
    mode_text = "" if planned is None else f", spec.switching.planned → {str(planned).lower()}"
    token = timestamp(now.replace(microsecond=0))
    current = spec.get("activeMember")
    return Patch(
        {
            "metadata": {"resourceVersion": version},
            "spec": {"activeMember": target, "switchRequest": token, **mode},
        },
        f"spec.activeMember: {current or '(unset)'} → {target}, spec.switchRequest → {token}{mode_text}",
    )


def _estimate(status: FailoverGroupStatus, target: str) -> tuple[int | None, float | None] | None:
    for entry in status.replication:
        if entry.member == target:
            return entry.events_behind, entry.rpo_seconds
    return None


def _task_changes(group: str, tasks: list[Obj], plan: SwitchPlan) -> list[TaskChange]:
    found = []
    for task in tasks:
        roles = following_groups(task).get(group)
        if roles is None:
            continue
        # A source reads the consumers' member, targets write to the producers' member.
        reads = "source" in roles
        before = plan.consumer if reads else plan.producer
        after = plan.target
        found.append(TaskChange(meta(task)[1], roles, before, after, lag_of(task)[0].seconds_behind))
    return sorted(found, key=lambda c: c.name)


def _replicating_into(member: Obj, tasks: list[Obj]) -> list[tuple[str, float | None, datetime | None]]:
    """Tasks that write into the member's namespace (same connection): what they have not copied yet
    is what the member lacks after a switch."""
    wanted = _normal(member.get("connection") or {})
    found = []
    for task in tasks:
        if any(
            role.startswith("target:") and _normal(body.get("connection") or {}) == wanted
            for role, body in endpoints(spec_of(task))
        ):
            lag = lag_of(task)[0]
            found.append((meta(task)[1], lag.seconds_behind, lag.last_batch_time))
    return sorted(found)


def _normal(connection: Obj) -> Obj:
    """A connection with the Secret key's default filled in, so that equal references compare equal."""
    ref = connection.get("secretRef")
    if isinstance(ref, dict):
        return {**connection, "secretRef": {"key": "connectionString", **ref}}
    return connection


def _warnings(group: Obj, target: str) -> list[str]:
    found = []
    probe = next((p for p in group_status(group).probes if p.member == target), None)
    if probe is None:
        found.append(f"{target} has not been probed yet")
    elif not probe.healthy:
        found.append(
            f"{target} failed its last probe ({probe.consecutive_failures} in a row): {probe.message}"
        )
    stalled = condition(group, "Stalled")
    if stalled is not None and stalled.status == "True":
        found.append(f"the group is Stalled ({stalled.reason}): {stalled.message}")
    return found


def _mode_text(plan: SwitchPlan) -> str:
    if plan.estimate is None:
        left = "not measured (no ReplicationTask in the group's status copies into it)"
    elif plan.estimate[0] is None:
        left = "not measured yet"
    else:
        left = f"{output.count(plan.estimate[0])} events ({output.seconds(plan.estimate[1])})"
    if plan.planned:
        return (
            f"planned: waits until the replication into {plan.target} has caught up (now behind: {left}), "
            f"at most {plan.planned_timeout_seconds}s, then switches anyway"
        )
    return f"forced: at once; what is not copied to {plan.target} yet stays behind (now: {left})"


def show(plan: SwitchPlan) -> list[Text]:
    """The plan as lines for a human."""
    ep = plan.endpoints
    verb = "Fail back" if plan.failback else "Fail over"
    lines = [
        Text.assemble(
            (f"{verb} FailoverGroup ", "bold"),
            (f"{plan.namespace}/{plan.group}", "bold cyan"),
            f" ({plan.mode} mode) to {plan.target}",
        ),
        Text(f"  producers  {plan.producer} ({ep[plan.producer]})  →  {plan.target} ({ep[plan.target]})"),
    ]
    if plan.failback and plan.consumer != plan.target:
        lines.append(
            Text(
                f"  consumers  {plan.consumer} ({ep[plan.consumer]})  →  {plan.target}, once "
                f"{plan.consumer} is drained (at most {plan.drain_timeout_seconds}s)"
            )
        )
    else:
        lines.append(
            Text(f"  consumers  {plan.consumer} ({ep[plan.consumer]})  →  {plan.target} ({ep[plan.target]})")
        )
    lines.append(Text("  published  the group's endpoints ConfigMap (and DNS records, if configured)"))
    lines.append(Text(f"  switch     {_mode_text(plan)}"))
    lines.append(Text(f"  change     {plan.patch.describe}"))
    if plan.tasks:
        lines.append(Text("Tasks following the group:", style="bold"))
        for task in plan.tasks:
            lines.append(
                Text(
                    f"  {task.name}  {task.roles}: {task.before} → {task.after}   "
                    f"lag {output.seconds(task.lag_seconds)}"
                )
            )
    if plan.into_target:
        lines.append(
            Text(
                f"Replication into {plan.target} (what it has not copied yet is missing there):", style="bold"
            )
        )
        for name, lag, last in plan.into_target:
            batch = timestamp(last) if last is not None else "never"
            lines.append(Text(f"  {name}  {output.seconds(lag)} behind, last batch {batch}"))
    else:
        lines.append(
            Text(
                f"No ReplicationTask in this namespace writes into {plan.target}: no lag figure to "
                "estimate loss from.",
                style="dim",
            )
        )
    lines.extend(Text(f"warning: {w}", style="bold yellow") for w in plan.warnings)
    return lines


async def run_switch(
    cluster: Cluster,
    group: str,
    member: str | None,
    *,
    planned: bool | None = None,
    yes: bool,
    wait: bool = True,
    timeout: float | None = None,
) -> None:
    out = output.console()
    ns = cluster.target.namespace
    found = await cluster.require(BY_KIND["FailoverGroup"], ns, group)
    tasks = await cluster.items(TASKS, ns)
    try:
        plan = plan_switch(found, member, tasks, planned)
    except NothingToDo as done:
        out.print(str(done))
        return
    for line in show(plan):
        out.print(line)
    if not yes and not confirmed(out):
        raise PluginError("nothing changed")
    started = time.monotonic()
    deadline = started + (timeout or default_timeout(plan))
    written = await cluster.patch(GROUPS, ns, group, plan.patch.body, plan.patch.content_type)
    generation = (written.get("metadata") or {}).get("generation")
    out.print(Text(f"requested: {plan.patch.describe}", style="green"))
    if wait:
        await follow(cluster, plan, started, deadline, generation=generation)


_YES, _NO = {"y", "yes"}, {"n", "no", ""}


def confirmed(out: Console) -> bool:
    """`y`/`yes` go on, `n`/`no` or just Enter do not (any case); anything else is asked again."""
    while True:
        out.print("Proceed? [y/N]: ", end="", markup=False)
        out.file.flush()
        try:
            answer = input().strip().lower()
        except EOFError:  # no terminal and nothing piped in: no consent
            out.print()
            return False
        if answer in _YES | _NO:
            return answer in _YES
        out.print("Please answer yes or no.")


def default_timeout(plan: SwitchPlan) -> float:
    # A request is seen at once (a spec change wakes the group); a failback waits for the drain.
    rounds = 6 * plan.period_seconds + 60
    waits = plan.planned_timeout_seconds if plan.planned else 0
    return rounds + waits + (plan.drain_timeout_seconds if plan.failback else 0)
