"""How long each phase of a switch took, kept in `status.switches` (the last few) and told by a Normal
Event `SwitchMeasured` once the record is complete: detected → decided → endpoints published → each
follower flowing on the new member, and for a switch of producers what it left behind.

Followers report themselves: a ReplicationTask whose source follows the group says in its status which
member it reads (`activeSourceMember`) and when its first micro-batch on that member completed
(`firstBatchOnMemberTime`, recorded by its driver), so the time is exact however late a round sees it.
A driver that does not record it leaves only `lastBatchTime`: then the first one seen on the new member
after the decision counts, late by at most a batch interval when a round (once a probe period, or sooner
when woken) sees a later batch first. Targets that follow the group report no member of their own, so
only sources are measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from federator import reasons
from federator.failover.replication import Replication
from federator.failover.state import Switch
from federator.status.events import Note
from federator_contract.api.connections import connections
from federator_contract.api.failovergroup import FollowerFlowing, SwitchLoss, SwitchRecord
from federator_contract.api.replicationtask import ReplicationTaskSpec, ReplicationTaskStatus

HISTORY = 5
"""Switch records kept in status (the contract's bound)."""
MAX_FOLLOWERS = 64
"""Followers measured per switch (the contract's bound; the first by name)."""
FOLLOW_LIMIT = timedelta(minutes=10)
"""How long a record waits for its followers before it is complete without them."""

FORCED = frozenset({"failover", "requested", "plannedTimeout", "memberRemoved"})
"""Causes of a switch that may leave events behind (producers leave before the copies caught up)."""

# Histogram phases (federator_failover_phase_seconds{phase}).
DETECTION, PUBLISHING, FOLLOWING = "detected_to_decided", "decided_to_published", "decided_to_flowing"


@dataclass(frozen=True)
class Follower:
    """What a task whose source follows the group says about itself."""

    task: str
    member: str | None
    last_batch: datetime | None
    first_batch: datetime | None = None
    """Its first batch on `member` (None: its driver does not say)."""


@dataclass(frozen=True)
class Timings:
    records: tuple[SwitchRecord, ...]
    notes: list[Note]
    observed: list[tuple[str, float]]
    """(phase, seconds) measured this round, for the histogram."""


def followers(group: str, tasks: Iterable[Mapping[str, Any]]) -> list[Follower]:
    """The tasks (ReplicationTask objects of the group's namespace) whose source follows `group`."""
    found = []
    for task in tasks:
        try:
            spec = ReplicationTaskSpec.model_validate(task.get("spec") or {})
            status = ReplicationTaskStatus.model_validate(task.get("status") or {})
        except ValidationError:
            continue  # reported as Stalled by its own controller; it flows nowhere
        if any(
            site.role == "source" and site.followed_group is not None and site.followed_group.name == group
            for site in connections(spec)
        ):
            name = str((task.get("metadata") or {}).get("name"))
            member, first = status.active_source_member, status.first_batch_on_member_time
            found.append(Follower(name, member, status.last_batch_time, first))
    return sorted(found, key=lambda f: f.task)


def measure(
    records: Sequence[SwitchRecord],
    switches: Sequence[Switch],
    *,
    decided: datetime,
    published: datetime | None,
    loss: SwitchLoss | None,
    tasks: Sequence[Follower] | None,
    began: tuple[datetime, datetime] | None = None,
    copying: Replication | None = None,
) -> Timings:
    """The records after a round: one opened per switch made (`decided`: when the machine moved,
    `published`: when the endpoints were, None when publishing failed; `loss`: what producers left behind;
    `tasks`: the followers now, None where task status is not known; `copying`: the tasks copying from
    the producers' member before the round, whose count later confirms a loss), and the open ones
    brought up to date with the followers' progress. `began`: the round's `now` and when the round
    really began; a switch detected at the former counts from the latter."""
    timings = Timings(tuple(records), [], [])
    for switch in switches:
        if switch.cause == "initial":
            continue
        # A switch still waiting for its followers is over when the next one comes.
        closed = [_closed(r, timings, "superseded by the next switch") for r in timings.records]
        if began is not None and switch.detected == began[0]:
            switch = dataclasses.replace(switch, detected=began[1])
        opened = _opened(switch, decided, published, loss if switch.roles != "consumers" else None, tasks)
        opened = opened.model_copy(update={"loss_tasks": _loss_tasks(switch, copying)})
        timings.observed.append((DETECTION, opened.decided_seconds))
        if opened.published_seconds is not None:
            timings.observed.append((PUBLISHING, opened.published_seconds))
        timings = Timings(tuple([*closed, opened][-HISTORY:]), timings.notes, timings.observed)
    now = published or decided
    current = [_followed(r, tasks, now, timings) for r in timings.records]
    return Timings(tuple(current), timings.notes, timings.observed)


def _opened(
    switch: Switch,
    decided: datetime,
    published: datetime | None,
    loss: SwitchLoss | None,
    tasks: Sequence[Follower] | None,
) -> SwitchRecord:
    # Sources read the consumers' member: a move of producers alone leaves them where they are.
    moving = [] if switch.roles == "producers" or tasks is None else tasks[:MAX_FOLLOWERS]
    return SwitchRecord(
        source=switch.source,
        target=switch.target,
        roles=switch.roles,
        cause=switch.cause,
        detected=switch.detected,
        decided=decided,
        decided_seconds=_seconds(switch.detected, decided),
        published_seconds=_seconds(decided, published) if published is not None else None,
        followers=[FollowerFlowing(task=f.task) for f in moving],
        events_left_behind=loss.events_behind if loss is not None else None,
        rpo_seconds=loss.rpo_seconds if loss is not None else None,
        left_behind_measured_at=loss.measured_at if loss is not None else None,
    )


def _loss_tasks(switch: Switch, copying: Replication | None) -> list[str]:
    """The tasks copying from the member producers left to the one they moved to (a forced switch)."""
    if switch.roles == "consumers" or switch.cause not in FORCED or copying is None:
        return []
    found = copying.get(switch.target)
    return list(found.tasks) if found is not None else []


def _followed(
    record: SwitchRecord, tasks: Sequence[Follower] | None, now: datetime, timings: Timings
) -> SwitchRecord:
    if record.complete:
        return record
    by_name = {t.task: t for t in tasks or ()}
    flowing = []
    for follower in record.followers:
        seconds = follower.flowing_seconds
        if seconds is None:
            seconds = _flowing(record, by_name.get(follower.task))
            if seconds is not None:
                timings.observed.append((FOLLOWING, seconds))
        flowing.append(FollowerFlowing(task=follower.task, flowing_seconds=seconds))
    updated = record.model_copy(update={"followers": flowing})
    if all(f.flowing_seconds is not None for f in flowing):
        return _closed(updated, timings, "")
    if now - record.decided >= FOLLOW_LIMIT:
        return _closed(updated, timings, f"not flowing after {FOLLOW_LIMIT.total_seconds():.0f}s")
    return updated


def _flowing(record: SwitchRecord, follower: Follower | None) -> float | None:
    """Seconds from the decision to the follower's first batch on the new member (None: not yet). Batch
    times are whole seconds in status, so a batch in the second of the decision counts. A first batch on
    the member from before the decision is from an earlier stay there: the task has not moved yet."""
    if follower is None or follower.member != record.target:
        return None
    batch = follower.first_batch or follower.last_batch
    if batch is None or batch < record.decided.replace(microsecond=0):
        return None
    return _seconds(record.decided, batch)


def _closed(record: SwitchRecord, timings: Timings, unfinished: str) -> SwitchRecord:
    """The record complete, its Event added (`unfinished`: why followers still not flowing are left)."""
    if record.complete:
        return record
    timings.notes.append(Note("Normal", reasons.SWITCH_MEASURED, describe(record, unfinished)))
    return record.model_copy(update={"complete": True})


def describe(record: SwitchRecord, unfinished: str = "") -> str:
    """A record in words: `SwitchMeasured`'s message."""
    phases = f"detected → decided {record.decided_seconds:.1f}s"
    if record.published_seconds is not None:
        phases += f", decided → endpoints published {record.published_seconds:.1f}s"
    else:
        phases += ", endpoints not published"
    moved = f"switch {record.source} → {record.target} ({record.cause}, {record.roles}): {phases}"
    return moved + _followers_text(record, unfinished) + _left_behind_text(record)


def _followers_text(record: SwitchRecord, unfinished: str) -> str:
    if record.roles == "producers":
        return "; followers stay with the consumers"
    if not record.followers:
        return "; no ReplicationTask source follows the group (or their status is not known here)"
    told = []
    for follower in record.followers:
        seconds = follower.flowing_seconds
        told.append(
            f"{follower.task} after {seconds:.1f}s"
            if seconds is not None
            else f"{follower.task} {unfinished}"
        )
    return f"; followers flowing on {record.target}: " + ", ".join(told)


def _left_behind_text(record: SwitchRecord) -> str:
    if record.events_left_behind is None and record.rpo_seconds is None:
        return ""
    events = f"{record.events_left_behind} events" if record.events_left_behind is not None else "events"
    span = f" ({record.rpo_seconds:g}s of enqueue time)" if record.rpo_seconds is not None else ""
    return f"; left behind {events}{span}"


def _seconds(start: datetime, end: datetime) -> float:
    return round(max(0.0, (end - start).total_seconds()), 3)
