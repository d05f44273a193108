"""Following a requested switch: the group's status and Events, and the tasks that follow it, polled every
second and printed as they change, until the switch completed, the group stalled, or time ran out."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text

from federator.kubectl import output
from federator.kubectl.cluster import Cluster, PluginError, ref_of
from federator.kubectl.model import Obj, condition, headline, parse_time, status_of
from federator_contract.api.kinds import BY_KIND

if TYPE_CHECKING:
    from federator.kubectl.failover import SwitchPlan

GROUPS = ref_of(BY_KIND["FailoverGroup"])
TASKS = ref_of(BY_KIND["ReplicationTask"])
POLL_SECONDS = 1.0


class _Progress:
    """What has been printed already, so each change is told once."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.wall_start = time.time()
        self.seen: dict[str, Any] = {}
        self.events: set[tuple[str, Any]] = set()
        self.out = output.console()

    def say(self, key: str, value: Any, text: str, style: str = "") -> None:
        if self.seen.get(key, object()) == value:
            return
        self.seen[key] = value
        self.out.print(Text.assemble((f"+{time.monotonic() - self.started:>4.0f}s ", "dim"), (text, style)))


async def follow(
    cluster: Cluster, plan: SwitchPlan, started: float, deadline: float, until_requested: str | None = None
) -> None:
    """Return once the switch completed (or, with `until_requested`, once the operator recorded that
    request); raise PluginError when the group stalls, disappears, or the deadline passes."""
    progress = _Progress(started)
    final_request = plan.patches[-1].requested if plan.patches else None
    while True:
        group = await cluster.get(GROUPS, plan.namespace, plan.group)
        if group is None:
            raise PluginError(f"FailoverGroup {plan.group} was deleted")
        status = status_of(group)
        _report_group(progress, status, group)
        await _report_events(progress, cluster, plan)
        stalled = condition(group, "Stalled")
        if stalled is not None and stalled.status == "True":
            raise PluginError(f"the group is Stalled ({stalled.reason}): {stalled.message}")
        requested = status.get("requestedMember")
        if until_requested is not None:
            if requested == until_requested:
                return
        elif (final_request is None or requested == final_request) and _arrived(plan, status):
            pending = await _report_tasks(progress, cluster, plan)
            if not pending:
                progress.say("done", True, f"done: producers and consumers use {plan.target}", "bold green")
                return
        if time.monotonic() >= deadline:
            raise PluginError(_timeout_message(plan, status, progress))
        await asyncio.sleep(POLL_SECONDS)


def _arrived(plan: SwitchPlan, status: Obj) -> bool:
    return status.get("producerMember") == status.get("consumerMember") == plan.target


def _report_group(progress: _Progress, status: Obj, group: Obj) -> None:
    where = (status.get("phase"), status.get("producerMember"), status.get("consumerMember"))
    progress.say(
        "where", where, f"phase {where[0]}: producers on {where[1]}, consumers on {where[2]}", "bold"
    )
    pending = tuple(status.get("drainPending") or ())
    if pending or "drain" in progress.seen:
        text = f"draining {where[2]}: {', '.join(pending)} still hold messages" if pending else "drained"
        progress.say("drain", pending, text, "yellow" if pending else "green")
    waiting = status.get("pendingSwitch") or {}
    if waiting or "waiting" in progress.seen:
        text = (
            f"planned switch to {waiting.get('member')} waits for the replication to catch up "
            f"(since {waiting.get('since')})"
            if waiting
            else "planned switch no longer waiting"
        )
        progress.say("waiting", waiting.get("member"), text, "yellow")
    state, reason, message = headline(group)
    progress.say("state", (state, reason), f"{state} {reason}: {message}", "dim")


async def _report_events(progress: _Progress, cluster: Cluster, plan: SwitchPlan) -> None:
    for event in await cluster.events(plan.namespace):
        involved = event.get("involvedObject") or {}
        if involved.get("kind") != "FailoverGroup" or involved.get("name") != plan.group:
            continue
        when = parse_time(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or (event.get("metadata") or {}).get("creationTimestamp")
        )
        if when is None or when.timestamp() < progress.wall_start - 1:
            continue
        key = ((event.get("metadata") or {}).get("uid", ""), event.get("count"))
        if key in progress.events:
            continue
        progress.events.add(key)
        style = "bold yellow" if event.get("type") == "Warning" else "cyan"
        progress.say(f"event:{key}", True, f"Event {event.get('reason')}: {event.get('message')}", style)


async def _report_tasks(progress: _Progress, cluster: Cluster, plan: SwitchPlan) -> list[str]:
    """Tasks whose source follows the group and does not read the new member yet (Stalled ones are
    reported, not waited for: they need a human anyway)."""
    pending = []
    for change in plan.tasks:
        if "source" not in change.roles:
            continue
        task = await cluster.get(TASKS, plan.namespace, change.name)
        if task is None:
            continue
        member = status_of(task).get("activeSourceMember")
        state, reason, message = headline(task)
        if member == plan.target:
            progress.say(f"task:{change.name}", member, f"task {change.name} reads from {member}", "green")
        elif state == "Stalled":
            progress.say(
                f"task:{change.name}",
                state,
                f"task {change.name} is Stalled ({reason}): {message}",
                "bold red",
            )
        else:
            progress.say(
                f"task:{change.name}",
                member,
                f"task {change.name} still reads from {member}; waiting for the operator to re-plan it",
            )
            pending.append(change.name)
    return pending


def _timeout_message(plan: SwitchPlan, status: Obj, progress: _Progress) -> str:
    if not _arrived(plan, status):
        drain = status.get("drainPending") or []
        detail = (
            f"; still holding messages on {status.get('consumerMember')}: {', '.join(drain)}" if drain else ""
        )
        return (
            f"the switch did not complete in time: producers on {status.get('producerMember')}, consumers on "
            f"{status.get('consumerMember')}{detail}. It goes on in the operator; watch it with "
            f"`kubectl federator status fg/{plan.group} --watch`"
        )
    waiting = [
        k.removeprefix("task:")
        for k, v in progress.seen.items()
        if k.startswith("task:") and v != plan.target
    ]
    left = ", ".join(waiting)
    return f"the group switched to {plan.target}, but these tasks still read from the old member: {left}"
