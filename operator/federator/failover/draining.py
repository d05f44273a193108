"""The drain of the consumers' member while a group fails back, as the ReplicationTasks that follow it
show it. Producers are back on the primary; what they sent to the secondary before is still there, and
a task whose event hub source follows the group reads it only while its source is the secondary. So the
consumers (and the tasks with them) move only once every such task has replicated all of it: its lag on
the secondary, measured after the producers left it, is nothing. A lag measured before then is no proof
(events came after it), nor one measured within `IN_FLIGHT` after (a send begun before may land later).
Service Bus entities are drained by `failback.drainEntities` (a queue drains itself; a hub keeps its
events, so there the readers' positions tell)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from federator_contract.api.connections import connections
from federator_contract.api.failovergroup import DrainHold, DrainingTask
from federator_contract.api.replicationtask import ReplicationTaskSpec, ReplicationTaskStatus

# A send a producer began before it saw the switch can land on the member after the switch: an entity found
# empty, or a task's lag measured, sooner than this after the producers left proves nothing about it.
IN_FLIGHT = timedelta(seconds=2)


def after_sends_landed(measured_at: datetime | None, producers_left: datetime | None) -> bool:
    """Whether a look at the member (a task's lag, the drained entities) taken at ``measured_at`` can prove it
    drained: taken once the sends the producers began before they left (``producers_left``) have landed."""
    if measured_at is None or producers_left is None:
        return False
    return measured_at >= producers_left + IN_FLIGHT


def followers_pending(
    group: str, consumer: str | None, producers_left: datetime | None, tasks: Iterable[Mapping[str, Any]]
) -> tuple[DrainHold, ...] | None:
    """Per task whose event hub source follows ``group`` and reads ``consumer``, what keeps it from being
    drained (empty: all drained); None when no such task exists (nothing to check here).
    ``producers_left``: when the producers moved away from ``consumer``."""
    pending: list[DrainHold] = []
    found = False
    for task in tasks:
        metadata = task.get("metadata") or {}
        try:
            spec = ReplicationTaskSpec.model_validate(task.get("spec") or {})
            status = ReplicationTaskStatus.model_validate(task.get("status") or {})
        except ValidationError:
            continue  # reported as Stalled by its own controller: it reads nothing
        if spec.source.event_hub is None or not _follows(spec, group):
            continue
        if status.active_source_member not in (None, consumer):
            continue  # already on the producers' member (it moved with a consumers' switch)
        found = True
        lag = status.lag
        measured = lag is not None and after_sends_landed(lag.measured_at, producers_left)
        behind = lag.events_behind if measured and lag is not None else None
        if measured and behind == 0:
            continue
        where = {"namespace": metadata.get("namespace") or "", "name": metadata.get("name") or ""}
        task_left = DrainingTask(**where, member=consumer or "", lag_measured=measured, events_behind=behind)
        pending.append(DrainHold(task=task_left))
    return tuple(pending) if found else None


def hold_words(hold: DrainHold) -> str:
    """One entry of ``drainPending`` in words: an entity by its name, a task by how far behind it is."""
    if hold.entity is not None:
        return hold.entity
    task = hold.task
    if task is None:
        return "an entry of a kind this version does not know"
    name = f"task {task.namespace}/{task.name}"
    if not task.lag_measured:
        return f"{name}: its lag on {task.member} not measured since producers left"
    if task.events_behind is None:
        return f"{name} still behind on {task.member} (how far not known)"
    return f"{name} still {task.events_behind} behind on {task.member}"


def drain_words(consumer: str | None, pending: Sequence[DrainHold]) -> str:
    """What keeps ``consumer`` from being drained, in words: the drain entities still hold messages; the
    tasks say how far behind they are."""
    entities = [hold.entity for hold in pending if hold.entity is not None]
    held = [f"{', '.join(entities)} still hold messages"] if entities else []
    others = [hold_words(hold) for hold in pending if hold.entity is None]
    return f"draining {consumer}: " + "; ".join([*held, *others])


def _follows(spec: ReplicationTaskSpec, group: str) -> bool:
    return any(
        site.role == "source" and site.followed_group is not None and site.followed_group.name == group
        for site in connections(spec)
    )
