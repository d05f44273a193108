"""The FailoverGroup state machine: the spec, the current status, this round's probe results and the drain
check → the next state, the switches made and the Events that announce them. Pure: time is passed in.

Rules (docs/patterns/failover.md has the diagram):
- `spec.activeMember` (default: the primary) is the desired member. Manual mode keeps the group on it.
  Automatic mode fails over when the producers' member fails `failureThreshold` probes in a row; that
  overrides the request in force (`spec.activeMember` with `spec.switchRequest`) until a new one is made
  (either field differs from what the status recorded), so holding the same request changes nothing.
- Switching to the primary moves producers first (phase FailingBack); consumers follow once the member
  they leave is drained, or after `drainTimeoutSeconds`. Every other switch moves both at once: a failover
  leaves a failing member, so there is nothing to wait for.
- Automatic mode never fails back by itself: a primary that recovered may fail again, and messages
  published to the secondary in between need consumers that know about them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from federator import reasons
from federator.failover.draining import after_sends_landed, hold_words
from federator.failover.replication import MemberReplication, Replication
from federator.status.events import Note
from federator_contract.api.failovergroup import (
    DrainHold,
    FailoverGroupSpec,
    FailoverGroupStatus,
    PendingSwitch,
    ProbeResult,
    SwitchLoss,
    SwitchRecord,
)

Phase = Literal["Normal", "FailedOver", "FailingBack"]
Roles = Literal["producers", "consumers", "both"]
Cause = Literal[
    "initial",
    "failover",
    "requested",
    "planned",
    "plannedTimeout",
    "drained",
    "drainTimeout",
    "memberRemoved",
]

# While nothing changes, probe results are written at most this often (status writes cost the API server
# and wake every watcher); any change of health is written at once.
PROBE_STATUS_REFRESH = timedelta(seconds=60)


@dataclass(frozen=True)
class ProbeOutcome:
    """One probe of one member."""

    healthy: bool
    message: str = ""


@dataclass(frozen=True)
class MemberHealth:
    """What the status says about one member's probes."""

    member: str
    healthy: bool
    consecutive_failures: int = 0
    last_probe_time: datetime | None = None
    message: str = ""
    failing_since: datetime | None = None
    """When the first of the consecutive failures was probed."""

    @classmethod
    def from_status(cls, probe: ProbeResult) -> MemberHealth:
        return cls(**{f.name: getattr(probe, f.name) for f in dataclasses.fields(cls)})

    def to_status(self) -> ProbeResult:
        return ProbeResult(**dataclasses.asdict(self))


@dataclass(frozen=True)
class Drain:
    """The drain check of the consumers' member while failing back: entities that still hold messages, or
    why the check could not be made."""

    pending: tuple[DrainHold, ...] = ()
    error: str = ""

    @property
    def drained(self) -> bool:
        return not self.pending and not self.error


# GroupState's fields the status keeps as they are → their names there: one table reads and writes them.
_KEPT = {
    "phase": "phase",
    "producer": "producer_member",
    "consumer": "consumer_member",
    "producer_since": "producer_since",
    "consumer_since": "consumer_since",
    "last_transition": "last_transition_time",
    "requested": "requested_member",
    "request_token": "switch_request",
    "pending": "pending_switch",
    "last_loss": "last_switch_loss",
}


@dataclass(frozen=True)
class GroupState:
    """The part of the status the machine reads and writes."""

    phase: Phase | None = None
    producer: str | None = None
    consumer: str | None = None
    producer_since: datetime | None = None
    consumer_since: datetime | None = None
    last_transition: datetime | None = None
    requested: str | None = None
    """`spec.activeMember` as last acted on ("" when unset); None before the first pass."""
    request_token: str | None = None
    """`spec.switchRequest` as last acted on ("" when unset); None before the first pass or in a status
    written before the field existed."""
    drain_pending: tuple[DrainHold, ...] = ()
    health: Mapping[str, MemberHealth] = field(default_factory=dict)
    pending: PendingSwitch | None = None
    """A planned switch waits for the replication to its member to catch up."""
    last_loss: SwitchLoss | None = None
    """`status.lastSwitchLoss` as written."""
    switches: tuple[SwitchRecord, ...] = ()
    """`status.switches`: the last switches and their phase timings (failover/timings.py keeps them)."""

    @property
    def pending_switch(self) -> str | None:
        return self.pending.member if self.pending is not None else None

    @property
    def pending_since(self) -> datetime | None:
        return self.pending.since if self.pending is not None else None

    @classmethod
    def from_status(cls, status: FailoverGroupStatus) -> GroupState:
        return cls(
            **{mine: getattr(status, theirs) for mine, theirs in _KEPT.items()},
            drain_pending=tuple(status.drain_pending),
            health={p.member: MemberHealth.from_status(p) for p in status.probes},
            switches=tuple(status.switches),
        )

    @classmethod
    def of(cls, group: Mapping[str, Any]) -> GroupState:
        """The state a FailoverGroup object's status holds."""
        return cls.from_status(FailoverGroupStatus.model_validate(group.get("status") or {}))

    def to_status(self) -> FailoverGroupStatus:
        """The status fields this state owns, every one set (one that is None is removed when written)."""
        return FailoverGroupStatus(
            **{theirs: getattr(self, mine) for mine, theirs in _KEPT.items()},
            drain_pending=list(self.drain_pending),
            probes=[h.to_status() for h in self.health.values()],
            switches=list(self.switches),
        )


@dataclass(frozen=True)
class Switch:
    """Producers, consumers or both moved from one member to another."""

    roles: Roles
    source: str | None
    target: str
    cause: Cause
    detected: datetime
    """When the need was seen: the first failed probe of a failover, the round that saw a request (or
    began waiting for the replication), the round that found the drain done or its time up."""


@dataclass(frozen=True)
class Step:
    state: GroupState
    switches: list[Switch]
    notes: list[Note]


def step(
    spec: FailoverGroupSpec,
    state: GroupState,
    probes: Mapping[str, ProbeOutcome],
    drain: Drain | None,
    now: datetime,
    replication: Replication | None = None,
) -> Step:
    """One round. `probes` has this round's outcome per member (members left out keep their record);
    `drain` is the drain check of the consumers' member, None when there is nothing to check;
    `replication` what the tasks copying from the producers' member to the others have left (None: not
    known this round, so a planned switch cannot wait for it)."""
    machine = _Machine(spec, state, now, replication)
    machine.record_probes(probes)
    if state.phase is None:
        machine.start()
    elif machine.state.producer not in machine.names or machine.state.consumer not in machine.names:
        machine.move("both", machine.wanted, "memberRemoved")
    elif not machine.follow_request():
        machine.fail_over_if_needed()
        machine.finish_failback(drain)
    machine.state = dataclasses.replace(
        machine.state, requested=spec.active_member or "", request_token=spec.switch_request or ""
    )
    return Step(machine.state, machine.switches, machine.notes)


class _Machine:
    def __init__(
        self, spec: FailoverGroupSpec, state: GroupState, now: datetime, replication: Replication | None
    ) -> None:
        self.spec, self.state, self.now, self.replication = spec, state, now, replication
        self.names = [m.name for m in spec.members]
        self.wanted = spec.active_member or spec.primary_member
        self.switches: list[Switch] = []
        self.notes: list[Note] = []

    def record_probes(self, probes: Mapping[str, ProbeOutcome]) -> None:
        threshold = self.spec.probe.failure_threshold
        health: dict[str, MemberHealth] = {}
        for name in self.names:
            before = self.state.health.get(name)
            outcome = probes.get(name)
            if outcome is None:
                if before is not None:
                    health[name] = before
                continue
            failures = 0 if outcome.healthy else (before.consecutive_failures if before else 0) + 1
            since = before.failing_since if before is not None and before.consecutive_failures else None
            failing_since = None if outcome.healthy else since or self.now
            after = MemberHealth(name, outcome.healthy, failures, self.now, outcome.message, failing_since)
            if before is not None and _same_result(before, after) and not self._stale(before):
                after = before  # nothing new to write
            health[name] = after
            if failures == threshold:
                self.note(
                    "Warning",
                    reasons.MEMBER_UNHEALTHY,
                    f"member {name} failed {failures} probes in a row: {outcome.message}",
                )
            elif outcome.healthy and before is not None and before.consecutive_failures >= threshold:
                self.note("Normal", reasons.MEMBER_RECOVERED, f"member {name} answers probes again")
        self.state = dataclasses.replace(self.state, health=health)

    def _stale(self, health: MemberHealth) -> bool:
        return health.last_probe_time is None or self.now - health.last_probe_time >= PROBE_STATUS_REFRESH

    def start(self) -> None:
        target = self.wanted
        self.state = dataclasses.replace(
            self.state,
            phase="Normal" if target == self.spec.primary_member else "FailedOver",
            producer=target,
            consumer=target,
            producer_since=self.now,
            consumer_since=self.now,
            last_transition=self.now,
        )
        self.switches.append(Switch("both", None, target, "initial", self.now))
        self.note("Normal", reasons.ACTIVATED, f"producers and consumers use member {target}")

    def follow_request(self) -> bool:
        """Acts on `spec.activeMember`; True when it switched. In automatic mode only a new request counts
        (an automatic failover overrides the one in force); a status from before `switchRequest` existed
        recorded none, which is the same as an unset one."""
        asked = (self.spec.active_member or "", self.spec.switch_request or "")
        new = asked != (self.state.requested, self.state.request_token or "")
        waiting = self.state.pending_switch == self.wanted
        if self.spec.mode == "automatic" and not new and not waiting:
            return False
        if self.wanted == self.state.producer:
            self.state = dataclasses.replace(self.state, pending=None)
            return False
        cause = self._planned_cause()
        if cause is None:
            return False  # a planned switch waits for the replication to catch up
        if self.wanted == self.spec.primary_member and self.state.consumer != self.wanted:
            self.move("producers", self.wanted, cause)
        else:
            self.move("both", self.wanted, cause)
        return True

    def _planned_cause(self) -> Cause | None:
        """`requested` for a forced switch; for a planned one `planned` once the tasks copying to the member
        have nothing left, `plannedTimeout` when the wait is over, None while it lasts."""
        copying = self.replication.get(self.wanted) if self.replication is not None else None
        if not self.spec.switching.planned:
            return "requested"
        if copying is None or copying.caught_up:
            return "planned"
        since = self.state.pending_since if self.state.pending_switch == self.wanted else None
        timeout = timedelta(seconds=self.spec.switching.planned_timeout_seconds)
        if since is not None and self.now >= since + timeout:
            return "plannedTimeout"
        if since is None:
            left = copying.describe() if copying.events_behind is not None else "lag not measured yet"
            self.note(
                "Normal",
                reasons.PLANNED_SWITCH_WAITING,
                f"switching to member {self.wanted} once the replication to it has caught up ({left}); "
                f"at most {self.spec.switching.planned_timeout_seconds}s",
            )
        self.state = dataclasses.replace(
            self.state, pending=PendingSwitch(member=self.wanted, since=since or self.now)
        )
        return None

    def fail_over_if_needed(self) -> None:
        if self.spec.mode != "automatic":
            return
        active = self.state.producer
        assert active is not None
        health = self.state.health.get(active)
        threshold = self.spec.probe.failure_threshold
        if health is None or health.consecutive_failures < threshold:
            return
        order = [self.spec.primary_member, *(n for n in self.names if n != self.spec.primary_member)]
        candidates = [n for n in order if n != active and self._healthy(n)]
        if not candidates:
            if health.consecutive_failures == threshold:
                self.note(
                    "Warning",
                    reasons.NO_HEALTHY_MEMBER,
                    f"member {active} failed {threshold} probes in a "
                    "row and no other member is healthy; staying until one is",
                )
            return
        self.move("both", candidates[0], "failover")

    def _healthy(self, name: str) -> bool:
        health = self.state.health.get(name)
        return health is not None and health.healthy

    def finish_failback(self, drain: Drain | None) -> None:
        if self.state.phase != "FailingBack":
            return
        assert self.state.producer is not None and self.state.producer_since is not None
        deadline = self.state.producer_since + timedelta(seconds=self.spec.failback.drain_timeout_seconds)
        if drain is not None and drain.drained and after_sends_landed(self.now, self.state.producer_since):
            self.move("consumers", self.state.producer, "drained")
        elif self.now >= deadline:
            self.move("consumers", self.state.producer, "drainTimeout", drain)
        elif drain is not None:
            self.state = dataclasses.replace(self.state, drain_pending=drain.pending)

    def move(self, roles: Roles, target: str, cause: Cause, drain: Drain | None = None) -> None:
        before = self.state
        source = before.consumer if roles == "consumers" else before.producer
        producer = before.producer if roles == "consumers" else target
        consumer = before.consumer if roles == "producers" else target
        phase: Phase
        if producer != self.spec.primary_member:
            phase = "FailedOver"
        else:
            phase = "Normal" if consumer == producer else "FailingBack"
        self.state = dataclasses.replace(
            before,
            phase=phase,
            producer=producer,
            consumer=consumer,
            producer_since=self.now if producer != before.producer else before.producer_since,
            consumer_since=self.now if consumer != before.consumer else before.consumer_since,
            last_transition=self.now,
            drain_pending=(),
            pending=None,
        )
        self.switches.append(Switch(roles, source, target, cause, self._detected(cause, before, source)))
        self.notes.append(_announcement(roles, source, target, cause, self, drain))
        if roles != "consumers":
            self._record_loss(target)

    def _detected(self, cause: Cause, before: GroupState, source: str | None) -> datetime:
        if cause == "failover" and source is not None:
            return before.health[source].failing_since or self.now
        if cause in ("planned", "plannedTimeout") and before.pending_since is not None:
            return before.pending_since
        return self.now

    def _record_loss(self, target: str) -> None:
        """What producers leave behind at the member they left: the tasks' lag to `target`, counted from what
        they had read (a forced switch, an automatic failover, or a planned one that timed out)."""
        found = self.replication.get(target) if self.replication is not None else None
        copying = found.if_forced if found is not None else None
        if copying is None or copying.caught_up:
            self.state = dataclasses.replace(self.state, last_loss=None)
            return
        loss = SwitchLoss(
            member=target,
            time=self.now,
            tasks=list(copying.behind),
            events_behind=copying.events_behind,
            rpo_seconds=copying.rpo_seconds,
            measured_at=copying.measured_at,
        )
        self.state = dataclasses.replace(self.state, last_loss=loss)
        left = copying.describe() if copying.events_behind is not None else "an unknown number of events"
        self.note(
            "Warning",
            reasons.SWITCH_LOSS,
            f"switched to member {target} with {left} not replicated to it yet{self._measured(copying)}",
        )

    def _measured(self, copying: MemberReplication) -> str:
        """How old the estimate is: what came and what was copied since its lag was measured are not in it
        (a member that is down cannot be measured)."""
        if copying.events_behind is None or copying.measured_at is None:
            return ""
        age = max(0.0, (self.now - copying.measured_at).total_seconds())
        return f", as their lag was measured {age:.1f}s before the switch"

    def note(self, type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        self.notes.append(Note(type_, reason, message))


def _planned(cause: Cause, target: str, machine: _Machine) -> str:
    """What a planned switch waited for: the replication into ``target`` (if any copies to it)."""
    if cause != "planned":
        return ""
    if machine.replication is not None and machine.replication.get(target) is not None:
        return "; planned: the replication to it had caught up"
    return "; planned: nothing replicates into it"


def _announcement(
    roles: Roles, source: str | None, target: str, cause: Cause, machine: _Machine, drain: Drain | None
) -> Note:
    who = {"producers": "producers", "consumers": "consumers", "both": "producers and consumers"}[roles]
    moved = f"{who} switched from member {source} to {target}"
    timeout = machine.spec.failback.drain_timeout_seconds
    match cause:
        case "failover":
            failures = machine.state.health[source].consecutive_failures if source else 0
            return Note(
                "Warning", reasons.FAILED_OVER, f"{moved}: {source} failed {failures} probes in a row"
            )
        case "requested" | "planned" if roles == "producers":
            waits = f"consumers stay on {source} until it is drained, at most {timeout}s"
            return Note("Normal", reasons.FAILING_BACK, f"{moved} (spec.activeMember); {waits}")
        case "requested" | "planned":
            unhealthy = "" if machine._healthy(target) else f"; warning: {target} failed its last probe"
            planned = _planned(cause, target, machine)
            return Note("Normal", reasons.SWITCHED, f"{moved} (spec.activeMember){planned}{unhealthy}")
        case "plannedTimeout":
            timeout = machine.spec.switching.planned_timeout_seconds
            message = f"{moved} (spec.activeMember) after waiting {timeout}s"
            return Note("Warning", reasons.PLANNED_SWITCH_TIMED_OUT, message)
        case "drained":
            return Note("Normal", reasons.FAILBACK_COMPLETE, f"{moved}: {source} is drained")
        case "drainTimeout" if drain is None:
            message = f"{moved} after {timeout}s (no drain entities to check)"
            return Note("Normal", reasons.FAILBACK_COMPLETE, message)
        case "drainTimeout" if drain is not None:
            left = (
                ", ".join(map(hold_words, drain.pending))
                if drain.pending
                else f"drain check failed: {drain.error}"
            )
            message = f"{moved} after {timeout}s without a complete drain ({left})"
            return Note("Warning", reasons.DRAIN_TIMEOUT, message)
        case _:
            return Note("Warning", reasons.SWITCHED, f"{moved}: the member was removed from spec.members")


def _same_result(a: MemberHealth, b: MemberHealth) -> bool:
    return (a.healthy, a.consecutive_failures, a.message) == (b.healthy, b.consecutive_failures, b.message)
