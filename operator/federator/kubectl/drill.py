"""`kubectl federator drill GROUP`: a planned switch to the next member and back, each requested as
`kubectl federator failover --planned` requests it (the same patch, from `plan_switch`), each waited for
until the operator's record of it (`status.switches`) is complete; then the report (drill_report.py).

A group not healthy enough is refused before anything changes (drill_checks.py). When the group's
switches are forced (`spec.switching.planned` false) the first request makes them planned and the drill
sets the field back at the end, whatever the outcome."""

from __future__ import annotations

import asyncio
import time

from rich.text import Text

from federator.kube.client import MERGE_PATCH
from federator.kubectl import output
from federator.kubectl.cluster import Cluster, PluginError
from federator.kubectl.drill_checks import Readiness, readiness
from federator.kubectl.drill_report import EXIT_CODES, REFUSED, Leg, Report, follower_counts, render
from federator.kubectl.failover import (
    GROUPS,
    TASKS,
    NothingToDo,
    SwitchPlan,
    confirmed,
    default_timeout,
    plan_switch,
)
from federator.kubectl.failover_follow import arrived, settled_elsewhere
from federator.kubectl.model import Obj, condition, group_status, spec_of
from federator_contract.api.failovergroup import FailoverGroupStatus, SwitchRecord
from federator_contract.api.kinds import BY_KIND

POLL_SECONDS = 1.0


class _Drill:
    def __init__(self, cluster: Cluster, name: str, fmt: str, timeout: float | None) -> None:
        self.cluster, self.name, self.timeout = cluster, name, timeout
        self.namespace = cluster.target.namespace
        self.fmt = fmt
        self.text = fmt == "text"
        self.out = output.console()

    def say(self, line: Text | str) -> None:
        if self.text:
            self.out.print(line)

    async def group(self) -> Obj:
        return await self.cluster.require(BY_KIND["FailoverGroup"], self.namespace, self.name)

    async def leg(self, number: int, target: str) -> Leg:
        """Request a planned switch to `target` and wait for the operator's records of it; what goes
        wrong (the cluster included) is the leg's error, so that the report still comes."""
        group = await self.group()
        status = group_status(group)
        leg = Leg(str(status.producer_member), target, _rpo_measured(status, target))
        started = time.monotonic()
        try:
            await self._switch(number, leg, group, started)
        except (NothingToDo, PluginError) as problem:
            leg.error = str(problem)
        leg.waited_seconds = round(time.monotonic() - started, 3)
        self.say(f"switch {number}: {leg.error or 'measured'}")
        return leg

    async def _switch(self, number: int, leg: Leg, group: Obj, started: float) -> None:
        plan = plan_switch(group, leg.target, await self.cluster.items(TASKS, self.namespace), planned=True)
        before = {_key(r) for r in group_status(group).switches}
        body, kind = plan.patch.body, plan.patch.content_type
        written = await self.cluster.patch(GROUPS, self.namespace, self.name, body, kind)
        self.say(f"switch {number}: {leg.source} → {leg.target} requested (planned); waiting for its record")
        generation = int((written.get("metadata") or {}).get("generation") or 0)
        deadline = started + (self.timeout or default_timeout(plan))
        leg.records, leg.error = await self._records(plan, before, generation, deadline)

    async def _records(
        self, plan: SwitchPlan, before: set[tuple[str, str, str]], generation: int, deadline: float
    ) -> tuple[list[SwitchRecord], str | None]:
        """The new records once the group rests on the target and they are complete, or why not."""
        while True:
            group = await self.cluster.get(GROUPS, self.namespace, self.name)
            if group is None:
                return [], f"FailoverGroup {self.name} was deleted"
            status = group_status(group)
            new = [r for r in status.switches if _key(r) not in before]
            done, error = _settled(group, status, plan, new, generation)
            if done:
                return new, error
            if time.monotonic() >= deadline:
                return new, f"not measured to its end in time: {_where(status)}"
            await asyncio.sleep(POLL_SECONDS)

    async def restore_forced(self) -> str | None:
        """The group's switches were forced before the drill: make them so again (None), or say why
        that failed."""
        body = {"spec": {"switching": {"planned": False}}}
        try:
            await self.cluster.patch(GROUPS, self.namespace, self.name, body, MERGE_PATCH)
        except PluginError as problem:
            return f"spec.switching.planned could not be set back to false: {problem}"
        self.say("spec.switching.planned set back to false")
        return None


def _settled(
    group: Obj, status: FailoverGroupStatus, plan: SwitchPlan, new: list[SwitchRecord], generation: int
) -> tuple[bool, str | None]:
    """(whether the wait is over, why the switch failed): over once the group rests on the target with
    its new records complete, stalls, or rests on another member after acting on the request."""
    stalled = condition(group, "Stalled")
    if stalled is not None and stalled.status == "True":
        return True, f"the group is Stalled ({stalled.reason}): {stalled.message}"
    if (status.observed_generation or 0) < generation:
        return False, None
    if arrived(plan, status) and new and all(r.complete for r in new):
        return True, None
    if settled_elsewhere(plan, status):
        held = f"{status.producer_member} ({status.phase})"
        return True, f"the switch to {plan.target} did not hold: the group is on {held}"
    return False, None


def _key(record: SwitchRecord) -> tuple[str, str, str]:
    return record.target, record.roles, record.decided.isoformat()


def _rpo_measured(status: FailoverGroupStatus, target: str) -> bool:
    return any(r.member == target and r.events_behind is not None for r in status.replication)


def _where(status: FailoverGroupStatus) -> str:
    records = [r for r in status.switches if not r.complete]
    waiting = f"; records not complete: {len(records)}" if records else ""
    return f"producers on {status.producer_member}, consumers on {status.consumer_member}{waiting}"


def _plan_lines(name: str, namespace: str, group: Obj, ready: Readiness) -> list[Text]:
    spec = spec_of(group)
    lines = [
        Text.assemble(
            ("Drill FailoverGroup ", "bold"),
            (f"{namespace}/{name}", "bold cyan"),
            f" ({spec.get('mode', 'manual')} mode): {ready.home} → {ready.away} → {ready.home}, planned",
        ),
        Text(
            f"  change     spec.activeMember → {ready.away}, then → {ready.home}, each with a new "
            "spec.switchRequest"
        ),
    ]
    if not (spec.get("switching") or {}).get("planned", False):
        lines.append(Text("  change     spec.switching.planned → true for the drill, false again after it"))
    lines.extend(Text(f"note: {n}", style="dim") for n in ready.notes)
    return lines


async def run_drill(cluster: Cluster, name: str, *, yes: bool, timeout: float | None, fmt: str) -> int:
    """Refuse, or drill and report; returns the outcome's exit code."""
    drill = _Drill(cluster, name, fmt, timeout)
    group = await drill.group()
    ready = readiness(group, await cluster.items(TASKS, drill.namespace))
    report = Report(drill.namespace, name, notes=ready.notes)
    if ready.refusals or ready.home is None or ready.away is None:
        report.outcome, report.reasons = REFUSED, ready.refusals
        return _finish(drill, report)
    for line in _plan_lines(name, drill.namespace, group, ready):
        drill.say(line)
    if not yes and not confirmed(drill.out):
        raise PluginError("nothing changed")
    forced = not (spec_of(group).get("switching") or {}).get("planned", False)
    before = follower_counts(name, await cluster.items(TASKS, drill.namespace))
    try:
        for number, target in enumerate((ready.away, ready.home), 1):
            report.legs.append(await drill.leg(number, target))
            if report.legs[-1].error:
                break
    finally:
        if forced:
            report.restore_error = await drill.restore_forced()
    after = follower_counts(name, await cluster.items(TASKS, drill.namespace))
    report.duplicates = {task: counts.since(before.get(task)) for task, counts in after.items()}
    return _finish(drill, report.judge())


def _finish(drill: _Drill, report: Report) -> int:
    if drill.text:
        for line in render(report):
            drill.out.print(line)
    else:
        output.dump(report.to_dict(), drill.fmt, drill.out)
    return EXIT_CODES[report.outcome]
