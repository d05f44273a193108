"""Replication lag and RPO in a ReplicationTask's status, per source partition (Event Hubs sources)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from federator_contract.api.base import StatusModel, list_map


class PartitionLag(StatusModel):
    """How far the task is behind in one source partition."""

    partition: Annotated[str, Field(max_length=8)]
    """The source partition id."""
    events_behind: Annotated[int, Field(ge=0)] | None = None
    """Events at the source not replicated yet. Unset: the task has not committed a batch yet."""
    seconds_behind: Annotated[float, Field(ge=0)] | None = None
    """Source enqueue time of the partition's newest event minus that of the last one replicated (0 when
    nothing is behind). Unset: not known yet."""
    source_sequence: int | None = None
    """Sequence number of the partition's newest event at the source."""
    replicated_sequence: int | None = None
    """Sequence number of the last event the task replicated (or skipped by its rules)."""
    read_sequence: int | None = None
    """Sequence number of the last event handed to a micro-batch (replicated, or being replicated)."""
    events_unread: Annotated[int, Field(ge=0)] | None = None
    """Events at the source not handed to a micro-batch yet: what a failover now would leave behind, the
    batch in flight being read already."""


class SourceOutage(StatusModel):
    """A spell in which the task's source did not answer the lag measurement (a namespace down), counted
    once it answered again: the events it held when it went down that the task had not replicated before
    it came back. The task replicates them now, late; those the source no longer holds are lost."""

    last_seen_up: datetime | None = None
    """The last measurement before the outage (unset: none since the driver started)."""
    down_since: datetime
    """The first measurement that failed."""
    down_until: datetime
    """The last one that failed; the task's replicated positions are taken there."""
    up_again: datetime
    """The first one that succeeded again."""
    events_left_behind: Annotated[int, Field(ge=0)] | None = None
    """Events the source held that the task had not replicated by `downUntil` (its committed batch, and
    what a batch in flight had written), still at the source (unset: the task had not committed a batch)."""
    events_expired: Annotated[int, Field(ge=0)] = 0
    """Events not replicated that the source no longer holds (its retention removed them): lost."""
    rpo_seconds: Annotated[float, Field(ge=0)] | None = None
    """The enqueue-time span of the events left behind (unset: not known)."""
    exact: bool = True
    """False when events were enqueued at the source after `downUntil` before it was measured again (the
    count then includes some that came after the outage), or when a batch was in flight and how far its
    writes got could not be read back from the targets (then the count is at most this)."""


class ReplicationLag(StatusModel):
    """Measured by the replication app every few seconds, against the source's partition tails."""

    measured_at: datetime | None = None
    """When the app measured it."""
    events_behind: Annotated[int, Field(ge=0)] | None = None
    """Events not replicated yet, all partitions."""
    seconds_behind: Annotated[float, Field(ge=0)] | None = None
    """The worst partition's seconds behind."""
    rpo_seconds: Annotated[float, Field(ge=0)] | None = None
    """What a failover now would leave behind: the enqueue-time span of the events not replicated yet
    (the worst partition's seconds behind)."""
    worst_partition: Annotated[str, Field(max_length=8)] | None = None
    """The partition furthest behind."""
    events_unread: Annotated[int, Field(ge=0)] | None = None
    """Events at the source not handed to a micro-batch yet, all partitions: what a forced switch now
    would leave behind (`eventsBehind` counts the batch in flight too)."""
    last_outage: SourceOutage | None = None
    """The source's last outage and what the task had left at it."""
    partitions: Annotated[
        list[PartitionLag], Field(max_length=1024, json_schema_extra=list_map("partition"))
    ] = []
    """One entry per source partition."""
