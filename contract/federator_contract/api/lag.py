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
    partitions: Annotated[
        list[PartitionLag], Field(max_length=1024, json_schema_extra=list_map("partition"))
    ] = []
    """One entry per source partition."""
