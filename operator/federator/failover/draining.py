"""The drain of the consumers' member while a group fails back, as the ReplicationTasks that follow it
show it. Producers are back on the primary; what they sent to the secondary before is still there, and
a task whose event hub source follows the group reads it only while its source is the secondary. So the
consumers (and the tasks with them) move only once every such task has replicated all of it: its lag on
the secondary, measured after the producers left it, is nothing. A lag measured before then is no proof
(events came after it). Service Bus entities are drained by `failback.drainEntities` (a queue drains
itself; a hub keeps its events, so there the readers' positions tell)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from federator_contract.api.connections import connections
from federator_contract.api.replicationtask import ReplicationTaskSpec, ReplicationTaskStatus


def followers_pending(
    group: str, consumer: str | None, producers_left: datetime | None, tasks: Iterable[Mapping[str, Any]]
) -> tuple[str, ...] | None:
    """Per task whose event hub source follows ``group`` and reads ``consumer``, what keeps it from being
    drained (empty: all drained); None when no such task exists (nothing to check here).
    ``producers_left``: when the producers moved away from ``consumer``."""
    pending: list[str] = []
    found = False
    for task in tasks:
        metadata = task.get("metadata") or {}
        name = f"{metadata.get('namespace')}/{metadata.get('name')}"
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
        if (
            lag is None
            or lag.measured_at is None
            or producers_left is None
            or lag.measured_at < producers_left
        ):
            pending.append(f"task {name}: its lag on {consumer} not measured since producers left")
        elif lag.events_behind is None:
            pending.append(f"task {name} still behind on {consumer} (how far not known)")
        elif lag.events_behind != 0:
            pending.append(f"task {name} still {lag.events_behind} behind on {consumer}")
    return tuple(pending) if found else None


def drain_words(consumer: str | None, pending: Sequence[str]) -> str:
    """What keeps ``consumer`` from being drained, in words: the drain entities (`drainPending`'s
    entries that are an entity's name: no spaces) still hold messages; the tasks' entries (from
    :func:`followers_pending`) say themselves how far behind they are."""
    entities = [entry for entry in pending if " " not in entry]
    tasks = [entry for entry in pending if " " in entry]
    held = [f"{', '.join(entities)} still hold messages"] if entities else []
    return f"draining {consumer}: " + "; ".join([*held, *tasks])


def _follows(spec: ReplicationTaskSpec, group: str) -> bool:
    return any(
        site.role == "source" and site.followed_group is not None and site.followed_group.name == group
        for site in connections(spec)
    )
