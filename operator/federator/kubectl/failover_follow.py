"""Following a requested switch: the group's status and Events, and the tasks that follow it, polled every
second and printed as they change, until the switch completed, the group stalled, or time ran out."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text

from federator.failover.draining import drain_words
from federator.failover.timings import describe
from federator.kubectl import output
from federator.kubectl.cluster import Cluster, PluginError, ref_of
from federator.kubectl.model import Obj, condition, group_status, headline, parse_time, task_status
from federator.status.conditions import timestamp
from federator_contract.api.failovergroup import FailoverGroupStatus
from federator_contract.api.kinds import BY_KIND

if TYPE_CHECKING:
    from federator.kubectl.failover import SwitchPlan

GROUPS = ref_of(BY_KIND["FailoverGroup"])
TASKS = ref_of(BY_KIND["ReplicationTask"])
POLL_SECONDS = 1.0
UNSEEN_GRACE_SECONDS = 10.0


class _Progress:
    """What has been printed already, so each change is told once."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.wall_start = time.time()
        self.seen: dict[str, Any] = {}
        self.events: set[tuple[str, Any]] = set()
        self.last_warning = ""
        """The latest Warning Event about the group: why a switch did not hold."""
        self.out = output.console()

    def say(self, key: str, value: Any, text: str, style: str = "") -> None:
        if self.seen.get(key, object()) == value:
            return
        self.seen[key] = value
        self.out.print(Text.assemble((f"+{time.monotonic() - self.started:>4.0f}s ", "dim"), (text, style)))


async def follow(
    cluster: Cluster,
    plan: SwitchPlan,
    started: float,
    deadline: float,
    generation: int | None = None,
) -> None:
    """Return once the switch completed; raise PluginError when the group stalls, disappears, the operator
    does not act on the request (`generation`: the group's generation the request made), switches
    elsewhere, or the deadline passes."""
    progress = _Progress(started)
    unseen_deadline = started + _unseen_grace(plan)
    while True:
        group = await cluster.get(GROUPS, plan.namespace, plan.group)
        if group is None:
            raise PluginError(f"FailoverGroup {plan.group} was deleted")
        status = group_status(group)
        _report_group(progress, status, group)
        await _report_events(progress, cluster, plan)
        stalled = condition(group, "Stalled")
        if stalled is not None and stalled.status == "True":
            raise PluginError(f"the group is Stalled ({stalled.reason}): {stalled.message}")
        if generation is not None and _observed(status) < generation:
            if time.monotonic() >= unseen_deadline:
                raise PluginError(_unseen_message(plan, status, generation, time.monotonic() - started))
        elif arrived(plan, status):
            if not await _report_tasks(progress, cluster, plan):
                _report_measured(progress, status, plan)
                progress.say("done", True, f"done: producers and consumers use {plan.target}", "bold green")
                return
        elif settled_elsewhere(plan, status):
            raise PluginError(_undone_message(plan, status, progress))
        if time.monotonic() >= deadline:
            raise PluginError(_timeout_message(plan, status, progress))
        await asyncio.sleep(POLL_SECONDS)


def _observed(status: FailoverGroupStatus) -> int:
    return status.observed_generation or 0


def _unseen_grace(plan: SwitchPlan) -> float:
    """How long the operator may take to act on a request: a spec change wakes the group at once, so a
    couple of probe rounds is generous."""
    return 2 * plan.period_seconds + UNSEEN_GRACE_SECONDS


def settled_elsewhere(plan: SwitchPlan, status: FailoverGroupStatus) -> bool:
    """The operator acted on the request, and producers and consumers rest on another member: no move
    under way (FailingBack), no planned switch waiting."""
    producer, consumer = status.producer_member, status.consumer_member
    return (
        producer == consumer != plan.target
        and status.phase != "FailingBack"
        and status.pending_switch is None
    )


def _watch_hint(plan: SwitchPlan) -> str:
    return f"`kubectl federator status fg/{plan.group} -n {plan.namespace} --watch`"


def _unseen_message(
    plan: SwitchPlan, status: FailoverGroupStatus, generation: int | None, waited: float
) -> str:
    return (
        f"the operator has not acted on the request in {waited:.0f}s (the group's status is of generation "
        f"{status.observed_generation or 'none'}, the request made {generation}): is it running? "
        "The request stays in spec.activeMember and spec.switchRequest and is carried out when it runs; "
        f"watch it with {_watch_hint(plan)}"
    )


def _undone_message(plan: SwitchPlan, status: FailoverGroupStatus, progress: _Progress) -> str:
    why = f"; last Event {progress.last_warning}" if progress.last_warning else ""
    return (
        f"the switch to {plan.target} did not hold: the operator has producers and consumers on "
        f"{status.producer_member} (phase {status.phase}){why}. See "
        f"`kubectl federator status fg/{plan.group} -n {plan.namespace}`"
    )


def arrived(plan: SwitchPlan, status: FailoverGroupStatus) -> bool:
    return status.producer_member == status.consumer_member == plan.target


def _report_group(progress: _Progress, status: FailoverGroupStatus, group: Obj) -> None:
    where = (status.phase, status.producer_member, status.consumer_member)
    progress.say(
        "where", where, f"phase {where[0]}: producers on {where[1]}, consumers on {where[2]}", "bold"
    )
    pending = tuple(status.drain_pending)
    if pending or "drain" in progress.seen:
        text = drain_words(where[2], pending) if pending else "drained"
        progress.say("drain", pending, text, "yellow" if pending else "green")
    waiting = status.pending_switch
    if waiting is not None or "waiting" in progress.seen:
        text = (
            f"planned switch to {waiting.member} waits for the replication to catch up "
            f"(since {timestamp(waiting.since)})"
            if waiting is not None
            else "planned switch no longer waiting"
        )
        progress.say("waiting", waiting.member if waiting is not None else None, text, "yellow")
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
        text = f"{event.get('reason')}: {event.get('message')}"
        if event.get("type") == "Warning":
            progress.last_warning = text
        progress.say(f"event:{key}", True, f"Event {text}", style)


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
        member = task_status(task).active_source_member
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


def _report_measured(progress: _Progress, status: FailoverGroupStatus, plan: SwitchPlan) -> None:
    """The phase timings the operator recorded for the switch (followers it has not seen flowing yet are
    told as such: it reads their status at its next round)."""
    last = status.switches[-1] if status.switches else None
    if last is not None and last.target == plan.target:
        progress.say("measured", True, "measured: " + describe(last, "not seen flowing yet"), "dim")


def _timeout_message(plan: SwitchPlan, status: FailoverGroupStatus, progress: _Progress) -> str:
    if not arrived(plan, status):
        drain, consumer = status.drain_pending, status.consumer_member
        detail = f"; {drain_words(consumer, drain)}" if drain else ""
        return (
            f"the switch did not complete in time: producers on {status.producer_member}, consumers on "
            f"{consumer}{detail}. It goes on in the operator; watch it with "
            f"{_watch_hint(plan)}"
        )
    waiting = [
        k.removeprefix("task:")
        for k, v in progress.seen.items()
        if k.startswith("task:") and v != plan.target
    ]
    left = ", ".join(waiting)
    return f"the group switched to {plan.target}, but these tasks still read from the old member: {left}"
