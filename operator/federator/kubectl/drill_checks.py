"""Whether a FailoverGroup is healthy enough to drill, and where the drill goes: pure functions of the group
and the ReplicationTasks of its namespace, each refusal a sentence that names what to fix.

A drill is two planned switches (to the next member, then back), so it refuses what would make it measure
something else than a switch: a group the operator has not caught up with, one that is not Ready, a
member failing (or no longer getting) its probes, a switch under way or not measured to its end, a
follower that does not flow, replication into a member whose lag is not measured (a planned switch would
wait for it to its timeout), and in automatic mode a group an automatic failover holds away from the
member its spec asks for (the drill would end on the spec's member, not where the group was)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from federator.kubectl.model import (
    Obj,
    condition,
    following_groups,
    group_status,
    headline,
    meta,
    spec_of,
    stale_batch,
    stale_probe,
    task_status,
)
from federator_contract.api.failovergroup import FailoverGroupStatus


@dataclass(frozen=True)
class Readiness:
    """The drill's route (`home` → `away` → `home`) or why there is none, and what to know before."""

    home: str | None
    away: str | None
    refusals: list[str]
    notes: list[str]


def readiness(group: Obj, tasks: list[Obj], now: datetime | None = None) -> Readiness:
    now = now or datetime.now(UTC)
    status = group_status(group)
    home = status.producer_member
    if not home or not status.consumer_member:
        name = meta(group)[1]
        return Readiness(None, None, [f"the operator has not reconciled FailoverGroup {name} yet"], [])
    refusals = [
        *_reconciled(group, status),
        *_switching(group, status),
        *_probes(group, status, now),
        *_followers(meta(group)[1], str(status.consumer_member), tasks, now),
        *_mode(group, status),
    ]
    away = _next_member(group, home)
    refusals += _replication(status, home, away)
    return Readiness(home, away, refusals, _notes(group, status, home, away))


def _next_member(group: Obj, home: str) -> str:
    """The member after `home` in the spec's order (the first after the last)."""
    names = [str(m.get("name")) for m in spec_of(group).get("members") or []]
    at = names.index(home) if home in names else -1
    return names[(at + 1) % len(names)]


def _reconciled(group: Obj, status: FailoverGroupStatus) -> list[str]:
    found = []
    generation = (group.get("metadata") or {}).get("generation")
    observed = status.observed_generation
    if generation is not None and (observed or 0) < generation:
        found.append(
            f"the operator has not acted on the group's latest spec yet (generation {generation}, status "
            f"of {observed or 'none'}): wait for it, or see whether it runs"
        )
    state, reason, message = headline(group)
    ready = condition(group, "Ready")
    if ready is None or ready.status != "True":
        found.append(f"the group is not Ready ({state} {reason}): {message}")
    return found


def _switching(group: Obj, status: FailoverGroupStatus) -> list[str]:
    found = []
    if status.producer_member != status.consumer_member or status.phase == "FailingBack":
        found.append(
            f"a switch is under way: producers on {status.producer_member}, consumers on "
            f"{status.consumer_member} (phase {status.phase})"
        )
    if status.pending_switch is not None:
        found.append(f"a planned switch to {status.pending_switch.member} is waiting for the replication")
    spec = spec_of(group)
    asked = (spec.get("activeMember") or "", spec.get("switchRequest") or "")
    acted = (status.requested_member or "", status.switch_request or "")
    if asked != acted:
        found.append(
            f"a switch request has not been acted on yet (spec.activeMember {asked[0] or '(unset)'}, "
            f"spec.switchRequest {asked[1] or '(unset)'})"
        )
    last = status.switches[-1] if status.switches else None
    if last is not None and not last.complete:
        found.append(
            f"the last switch ({last.source} → {last.target}) is still being measured: its followers do "
            "not all flow on the new member yet"
        )
    return found


def _probes(group: Obj, status: FailoverGroupStatus, now: datetime) -> list[str]:
    spec = spec_of(group)
    period = int((spec.get("probe") or {}).get("periodSeconds", 10))
    probes = {p.member: p for p in status.probes}
    found = []
    for member in spec.get("members") or []:
        name = str(member.get("name"))
        probe = probes.get(name)
        if probe is None:
            found.append(f"member {name} has not been probed yet")
        elif not probe.healthy:
            found.append(
                f"member {name} fails its probes ({probe.consecutive_failures} in a row): {probe.message}"
            )
        elif stale_probe(probe, period, now):
            found.append(
                f"member {name} has not been probed since {probe.last_probe_time}: is the operator running?"
            )
    return found


def _followers(group: str, consumer: str, tasks: list[Obj], now: datetime) -> list[str]:
    """Tasks whose source follows the group must flow on the consumers' member: their first batch on the
    new member is what the drill measures."""
    found = []
    for task in tasks:
        if "source" not in (following_groups(task).get(group) or ""):
            continue
        name, status = meta(task)[1], task_status(task)
        state, reason, message = headline(task)
        if state != "Ready":
            found.append(f"follower {name} is not Ready ({state} {reason}): {message}")
        elif status.active_source_member != consumer:
            found.append(f"follower {name} reads from {status.active_source_member}, not from {consumer}")
        elif status.last_batch_time is None or stale_batch(status.last_batch_time, now):
            when = status.last_batch_time or "never"
            found.append(f"follower {name} is not flowing (last batch: {when})")
    return found


def _mode(group: Obj, status: FailoverGroupStatus) -> list[str]:
    spec = spec_of(group)
    asked = spec.get("activeMember") or spec.get("primaryMember")
    if spec.get("mode") == "automatic" and status.producer_member != asked:
        return [
            f"an automatic failover holds the group on {status.producer_member} while its spec asks for "
            f"{asked}: fail back first (`kubectl federator failback`), or request {status.producer_member} "
            "explicitly"
        ]
    return []


def _replication(status: FailoverGroupStatus, home: str, away: str) -> list[str]:
    """A planned switch waits for the tasks copying into the member to have nothing left; a lag never
    measured would make it wait to its timeout."""
    found = []
    for entry in status.replication:
        if entry.member == away and entry.events_behind is None:
            tasks = ", ".join(entry.tasks) or "its tasks"
            found.append(
                f"the replication into {away} has not measured its lag yet ({tasks}): a planned switch "
                "would wait for it to its timeout"
            )
    return found if home != away else [*found, "the group has one member: nowhere to switch to"]


def _notes(group: Obj, status: FailoverGroupStatus, home: str, away: str | None) -> list[str]:
    spec = spec_of(group)
    notes = []
    behind = next((r for r in status.replication if r.member == away), None)
    if behind is None:
        notes.append(f"no ReplicationTask in the group's status copies into {away}: the RPO is not measured")
    elif behind.events_behind:
        notes.append(f"the first switch waits until the {behind.events_behind} events behind reach {away}")
    if home == spec.get("primaryMember"):
        drain = int((spec.get("failback") or {}).get("drainTimeoutSeconds", 600))
        notes.append(
            f"back to the primary {home} is a failback: consumers follow once {away} is drained (at most "
            f"{drain}s)"
        )
    if spec.get("mode") == "automatic":
        notes.append("automatic mode: a failover the probes trigger during the drill ends it (failed)")
    return notes
