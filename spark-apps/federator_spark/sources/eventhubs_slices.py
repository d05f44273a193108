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

from federator_spark.events import Event
from federator_spark.sources.eventhubs import EventHubsStreamReader, HubPartition

SLICE_SCHEMA = "partition string, partition_count int, start bigint, end bigint"
SLICE_COLUMNS = ("partition", "partition_count", "start", "end")


class EventHubsSliceReader(EventHubsStreamReader):
    """Options: those of :class:`EventHubsStreamReader`. Its batches are slices, not events."""

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, HubPartition)
        yield (partition.partition_id, partition.partition_count, partition.start, partition.end)

    def events(self, slices: Iterable[Any]) -> Iterator[Event]:
        """The events of each slice row, in order (executor side: the write task calls this)."""
        for row in slices:
            yield from self.read_events(
                HubPartition(row["partition"], row["partition_count"], row["start"], row["end"])
            )
