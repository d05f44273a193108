"""The replication app's Service Bus source: the driver spools and Spark checkpoints the spool positions,
the write task reads the spooled messages.

As with an event hub (``sources/eventhubs_slices.py``), a row per message would carry each message from a
read worker through Arrow and the JVM into the write worker: for a 500-message batch that hop took about
100 ms of the write task and more of the JVM. So a ReplicationTask reads a Service Bus entity in
*slices*: one row per spool file *n* of the batch, ``("0", 1, n - 1, n)`` (the spool positions ``(n - 1,
n]``, the slice schema of ``eventhubs_slices``), and the write task reads that file itself.

Nothing about the guarantees changes: receiving, spooling, and completing at the source once Spark's
commit log shows the batch are the ``servicebus`` reader's (``sources/servicebus.py``), and a replayed
batch reads the same spool files. Spark's ``numInputRows`` counts spool files; the app's own metrics
count messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition

from federator_spark import worker_gc
from federator_spark.events import Event
from federator_spark.sources.servicebus import ServiceBusStreamReader, SpoolPartition
from federator_spark.sources.servicebus_records import PARTITION
from federator_spark.sources.spool import SPOOL_KEY, Spool


class SpoolSlices(InputPartition):
    """The spool files of one batch, written by one Spark task (a source without partitions keeps its
    order in one task)."""

    def __init__(self, numbers: list[int]) -> None:
        super().__init__(numbers)
        self.numbers = numbers


class ServiceBusSliceReader(ServiceBusStreamReader):
    """What :class:`ServiceBusStreamReader` reads, as slices of spool files."""

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        numbers = list(range(start[SPOOL_KEY] + 1, end[SPOOL_KEY] + 1))
        return [SpoolSlices(numbers)] if numbers else []

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, SpoolSlices)
        worker_gc.freeze_loaded()  # an executor's Python worker
        for number in partition.numbers:
            yield (PARTITION, 1, number - 1, number)

    def events_by_partition(self, slices: Iterable[Any]) -> Iterator[Iterator[Event]]:
        """The messages of the slice rows, in spool order, as the one source partition they are (executor
        side: the write task calls this)."""
        yield self._events([n for row in slices for n in range(row["start"] + 1, row["end"] + 1)])

    def _events(self, numbers: list[int]) -> Iterator[Event]:
        spool = Spool(self.settings.spool_dir)
        for number in numbers:
            for row in super().read(SpoolPartition(number, str(spool.path(number)))):  # the file as rows
                yield Event(*row)
