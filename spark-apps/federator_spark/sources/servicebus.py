"""Stream reader for a Service Bus queue, topic subscription, or one of their dead-letter sub-queues.

Service Bus cannot replay, so the driver turns the entity into a log (design and crash walk-through:
``docs/servicebus-source.md``):

1. ``latestOffset`` receives up to the batch limit with a peek-lock receiver held by the driver,
   writes the new messages to spool file *n* (atomically) and only then returns ``{"spool": n}``.
2. Executors read the batch from the spool file, never from the broker, so a replayed batch is the
   same messages in the same order.
3. A message is completed at the source only after Spark's commit log shows its batch committed,
   i.e. after the sink's commit (every target accepted the batch). The commit log is checked on every
   ``latestOffset`` call and, while messages are held, every second by a settler thread that also
   renews their locks. ``reader.commit`` is not used: Spark calls it a batch late, and never while idle.
4. A message redelivered after a crash is recognised by its sequence number: completed at once if its
   batch is committed, held (not spooled again) if its batch is spooled but not committed.

The driver-side state lives in ``servicebus_driver`` (receiving and spooling) and ``servicebus_settling``
(completing, renewing, handing over); this module is what Spark calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from federator_spark import logs, worker_gc
from federator_spark.sources import trigger_phase
from federator_spark.sources.servicebus_driver import SourceDriver, driver_for
from federator_spark.sources.servicebus_records import to_row
from federator_spark.sources.servicebus_settings import SourceSettings
from federator_spark.sources.spool import SPOOL_KEY, Spool, offset, read_spool_file


class SpoolPartition(InputPartition):
    def __init__(self, number: int, path: str) -> None:
        super().__init__((number, path))
        self.number = number
        self.path = path


class ServiceBusStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Reads what :class:`SourceSettings` names. As the ``servicebus`` data source, from the options
    ``connection`` (JSON, see :class:`~federator_spark.connections.Connection`), ``queueName`` |
    ``topicName`` + ``subscriptionName``, ``subQueue`` (``none`` | ``deadLetter``),
    ``maxMessagesPerBatch`` (default 1000), ``checkpointLocation`` (**required**, the query's own: spool
    files live under it and Spark's commit log there decides completion), ``receiveWaitSeconds`` (how
    long an idle poll waits, default 1), ``maxLockRenewalSeconds`` (how long locks are renewed without
    any call from Spark, default 600), ``statusFile`` (where an outage of the namespace is reported while
    it is retried).
    """

    def __init__(self, settings: SourceSettings) -> None:
        logs.configure()  # the driver's source process
        self.settings = settings

    # ------------------------------------------------------------------------------------ driver side

    def _driver(self) -> SourceDriver:
        return driver_for(self.settings)

    def initialOffset(self) -> dict[str, int]:
        return offset(0)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.settings.max_messages)

    def prepareForTriggerAvailableNow(self) -> None:
        self._driver().prepare_available_now()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        trigger_phase.hold(self.settings.phase)
        wanted = self.settings.max_messages
        if isinstance(limit, ReadMaxRows):
            wanted = min(wanted, limit.max_rows)
        return offset(self._driver().latest(int(start[SPOOL_KEY]), wanted))

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        # Only the spool's paths: planning must not start a driver (which claims the source).
        spool = Spool(self.settings.spool_dir)
        return [
            SpoolPartition(n, str(spool.path(n))) for n in range(start[SPOOL_KEY] + 1, end[SPOOL_KEY] + 1)
        ]

    def commit(self, end: dict[str, int]) -> None:
        """Not used: Spark calls it one batch late and never while idle, so completion follows Spark's
        commit log instead (see :meth:`SourceDriver.settle`)."""

    # ------------------------------------------------------------------------------------ executor side

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, SpoolPartition)
        logs.configure()  # an executor's Python worker
        worker_gc.freeze_loaded()
        source, records = read_spool_file(Path(partition.path))
        for record in records:
            yield to_row(record, source)
