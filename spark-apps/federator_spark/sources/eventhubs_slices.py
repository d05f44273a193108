"""The replication app's Event Hubs source: Spark plans and checkpoints the ranges, the write task
reads the events.

A row per event would carry each event from a read worker through Arrow and the JVM into the write
worker: for a broker-to-broker copy that hop costs more CPU than the copy itself. So a ReplicationTask
reads an event hub in *slices*: one row per source partition and batch, ``(partition,
partition_count, start, end)``, the sequence numbers ``(start, end]`` that Spark's offsets name; the
write task of that row receives those events itself (:meth:`EventHubsSliceReader.events`, the same
receivers the ``eventhubs`` reader uses) and replicates them.

Nothing about the guarantees changes: offsets, their write-ahead log and the batch replayed with the
same ids after a crash are Spark's as before, and an event hub is a log, so a replayed slice holds the
same events. What changes is what Spark counts: ``numInputRows`` in query progress is the number of
slices; the app's own metrics (status file, Prometheus) count events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition

from federator_spark import worker_gc
from federator_spark.events import Event
from federator_spark.sources import eventhubs_streams
from federator_spark.sources.eventhubs import EventHubsStreamReader, HubPartition

SLICE_SCHEMA = "partition string, partition_count int, start bigint, end bigint"
SLICE_COLUMNS = ("partition", "partition_count", "start", "end")


class SliceGroup(InputPartition):
    """The slices one Spark task writes, in partition order."""

    def __init__(self, slices: list[HubPartition]) -> None:
        super().__init__([(p.partition_id, p.start, p.end) for p in slices])
        self.slices = slices


SMALL_BATCH_EVENTS = 500
"""A batch of at most this many events is written by one Spark task, whatever its partitions: about 50 ms
of one task slot's work (a slot moves ~10,000 events/s). A second task costs CPU however little it holds
(the executor's task thread, a Python worker's use, the scheduler): quiet members on ``local[2]`` made
two tasks a batch, and one task cut their executor threads' CPU by a quarter (docs/sharing.md)."""


class EventHubsSliceReader(EventHubsStreamReader):
    """What :class:`EventHubsStreamReader` reads, in at most ``slice_tasks`` Spark tasks per batch
    (default: a task per partition), and in one task when the batch holds at most
    ``SMALL_BATCH_EVENTS`` events. A batch's slices are spread over them by size, so a batch of many
    partitions runs in one wave of tasks when this is the number of task slots."""

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        slices = [p for p in super().partitions(start, end) if isinstance(p, HubPartition)]
        tasks = self.settings.slice_tasks or len(slices)
        if sum(p.end - p.start for p in slices) <= SMALL_BATCH_EVENTS:
            tasks = 1  # its receivers start at once in that task (events_by_partition)
        return [SliceGroup(group) for group in spread(slices, tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, SliceGroup)
        worker_gc.freeze_loaded()  # an executor's Python worker
        for part in partition.slices:
            yield (part.partition_id, part.partition_count, part.start, part.end)

    def events_by_partition(self, slices: Iterable[Any]) -> Iterator[Iterator[Event]]:
        """The events of each slice row, in order (executor side: the write task calls this). Every
        slice's receiver starts at once, so the later ones have events waiting when their turn comes."""
        parts = [HubPartition(r["partition"], r["partition_count"], r["start"], r["end"]) for r in slices]
        streams = [self.stream(part) for part in parts]
        handed_out = 0
        try:
            for part, stream in zip(parts, streams, strict=True):
                handed_out += 1
                yield self.read_events(part, stream)
        finally:  # the task stopped early: receivers it never read stay this worker's, for later tasks
            for stream in streams[handed_out:]:
                eventhubs_streams.keep(stream)


def spread(slices: list[HubPartition], tasks: int) -> list[list[HubPartition]]:
    """At most ``tasks`` groups of about equal event counts (largest first, each to the lightest
    group), each in partition order."""
    groups: list[list[HubPartition]] = [[] for _ in range(min(tasks, len(slices)))]
    sizes = [0] * len(groups)
    for part in sorted(slices, key=lambda p: (-(p.end - p.start), int(p.partition_id))):
        lightest = sizes.index(min(sizes))
        groups[lightest].append(part)
        sizes[lightest] += part.end - part.start
    return [sorted(group, key=lambda p: int(p.partition_id)) for group in groups]
