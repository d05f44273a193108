"""What the ReplicationTasks copying from a FailoverGroup's producers' member to its other members have
left to copy, read from their status (`status.lag`, which the replication app measures): whether a
planned switch may go now, what a forced one leaves behind, and the `LosslessFailover` condition.

A task copies to a member when its source connection is the producers' member's connection and one of
its event hub targets has the member's connection (the same Secret key, identity or emulator namespace).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from federator import reasons
from federator.status.conditions import ConditionUpdate
from federator_contract.api import failovergroup as group_api
from federator_contract.api.base import EndpointConnection, FedModel
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.lag import ReplicationLag
from federator_contract.api.replicationtask import ReplicationTaskSpec, ReplicationTaskStatus

LOSSLESS_FAILOVER = "LosslessFailover"


@dataclass(frozen=True)
class MemberReplication:
    """The tasks copying to one member, and what they have left."""

    member: str
    tasks: tuple[str, ...]
    events_behind: int | None
    """None while a task has not measured its lag."""
    rpo_seconds: float | None
    behind: tuple[str, ...] = ()
    """The tasks with events left."""
    measured_at: datetime | None = None
    """When the oldest of the tasks' lag was measured (None while one is not): a figure of a member
    that is down stays the last one measured before it went."""
    unread: MemberReplication | None = None
    """The same counted from what the tasks have read (handed to a batch), not committed: what a forced
    switch now leaves behind (the batch in flight still arrives). None: this is that count."""

    @property
    def caught_up(self) -> bool:
        return self.events_behind == 0

    @property
    def if_forced(self) -> MemberReplication:
        """What a forced switch now would leave behind."""
        return self.unread or self

    def describe(self) -> str:
        seconds = f", {self.rpo_seconds:g} s" if self.rpo_seconds is not None else ""
        return f"{self.events_behind} events{seconds} (tasks {', '.join(self.behind)})"

    def to_status(self) -> group_api.MemberReplication:
        return group_api.MemberReplication(
            member=self.member,
            tasks=list(self.tasks),
            events_behind=self.events_behind,
            rpo_seconds=self.rpo_seconds,
        )


Replication = Mapping[str, MemberReplication]


def replication_to_members(
    spec: FailoverGroupSpec, producer: str | None, tasks: Iterable[Mapping[str, Any]]
) -> dict[str, MemberReplication]:
    """Per member other than ``producer``: the tasks (ReplicationTask objects of the group's namespace)
    copying to it from ``producer``, and the sum of their lag."""
    members = {m.name: _key(m.connection) for m in spec.members}
    if producer not in members:
        return {}
    found: dict[str, list[tuple[str, ReplicationLag]]] = {name: [] for name in members if name != producer}
    for task in tasks:
        try:
            task_spec = ReplicationTaskSpec.model_validate(task.get("spec") or {})
        except ValidationError:
            continue  # a task the operator reports as Stalled copies nothing
        source = task_spec.source.event_hub
        if source is None or _key(source.connection) != members[producer]:
            continue
        targets = {_key(t.event_hub.connection) for t in task_spec.targets if t.event_hub is not None}
        lag = _lag(task)
        for name in found:
            if members[name] in targets:
                found[name].append((str((task.get("metadata") or {}).get("name")), lag))
    return {
        name: dataclasses.replace(
            _summed(name, copying), unread=_summed(name, [(n, _as_read(lag)) for n, lag in copying])
        )
        for name, copying in found.items()
        if copying
    }


def _as_read(lag: ReplicationLag) -> ReplicationLag:
    """The lag counted from the task's read positions (a driver that does not count them: committed)."""
    if lag.events_unread is None:
        return lag
    rpo = 0.0 if lag.events_unread == 0 else lag.rpo_seconds  # else at most the committed span
    return lag.model_copy(update={"events_behind": lag.events_unread, "rpo_seconds": rpo})


def _lag(task: Mapping[str, Any]) -> ReplicationLag:
    """The task's `status.lag`; one that cannot be read counts as not measured yet."""
    try:
        return ReplicationTaskStatus.model_validate(task.get("status") or {}).lag or ReplicationLag()
    except ValidationError:
        return ReplicationLag()


def _summed(member: str, copying: list[tuple[str, ReplicationLag]]) -> MemberReplication:
    names = tuple(sorted(name for name, _ in copying))
    events = [lag.events_behind for _, lag in copying]
    seconds = [lag.rpo_seconds for _, lag in copying]
    behind = tuple(sorted(name for name, lag in copying if (lag.events_behind or 0) > 0))
    measured = [lag.measured_at for _, lag in copying]
    return MemberReplication(
        member,
        names,
        None if None in events else sum(e for e in events if e is not None),
        None if None in seconds else max((s for s in seconds if s is not None), default=0.0),
        behind,
        None if None in measured else min(m for m in measured if m is not None),
    )


def _key(connection: FedModel) -> str:
    """A namespace connection, comparable across a member's and a task's models."""
    raw = connection.model_dump(by_alias=True, exclude_none=True)
    normal = EndpointConnection.model_validate(raw).model_dump(
        by_alias=True, exclude_none=True, exclude={"failover_group_ref"}
    )
    return json.dumps(normal, sort_keys=True)


def lossless_condition(producer: str | None, replication: Replication) -> ConditionUpdate:
    """Whether a planned failover now would lose anything."""
    if not replication:
        return ConditionUpdate(
            LOSSLESS_FAILOVER,
            "Unknown",
            reasons.NO_REPLICATION,
            f"no ReplicationTask copies an event hub from member {producer} to another member",
        )
    unknown = sorted(m for m, r in replication.items() if r.events_behind is None)
    if unknown:
        return ConditionUpdate(
            LOSSLESS_FAILOVER,
            "Unknown",
            reasons.LAG_NOT_MEASURED,
            f"the lag of the tasks copying to {', '.join(unknown)} is not measured yet",
        )
    behind = [r for _, r in sorted(replication.items()) if not r.caught_up]
    if behind:
        detail = "; ".join(f"to {r.member}: {r.describe()}" for r in behind)
        return ConditionUpdate(
            LOSSLESS_FAILOVER,
            "False",
            reasons.REPLICATION_BEHIND,
            f"a failover now would leave behind {detail}",
        )
    members = ", ".join(sorted(replication))
    return ConditionUpdate(
        LOSSLESS_FAILOVER,
        "True",
        reasons.CAUGHT_UP,
        f"a planned failover now loses nothing: everything is copied from {producer} to {members}",
    )
