"""The Python data sources, registered by name: ``eventhubs`` and ``servicebus`` (stream readers and
writers), ``federator-replication`` (the whole task's writer: editors, routing, several targets) and
``federator-slices`` (its source, an event hub or a Service Bus entity read in slices)."""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType

from federator_spark.events import SCHEMA
from federator_spark.sources.eventhubs import EventHubsStreamReader
from federator_spark.sources.eventhubs_slices import SLICE_COLUMNS, SLICE_SCHEMA, EventHubsSliceReader

SLICE_KIND = "sliceKind"  # which source a reader reads in slices: eventhubs (the default), servicebus

if TYPE_CHECKING:
    from federator_spark.sources.servicebus_slices import ServiceBusSliceReader

# Writers and the Service Bus reader are imported where they are made: Spark starts a Python process
# for a query's source, which imports this module, and the writers' plans (the task model, editors)
# would add half a second to the start of every query.


class EventHubsDataSource(DataSource):
    """Event Hubs. Reader options: see :class:`EventHubsStreamReader`. Writer options: see
    :func:`plan_from_sink_options` (one target, no routing)."""

    @classmethod
    def name(cls) -> str:
        return "eventhubs"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return EventHubsStreamReader(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from federator_spark.plan import plan_from_sink_options
        from federator_spark.sinks.replication import ReplicationWriter

        return ReplicationWriter(plan_from_sink_options("eventHub", self.options))


class ServiceBusDataSource(DataSource):
    """Service Bus. Reader (queue, subscription or dead-letter sub-queue) options: see
    :class:`ServiceBusStreamReader`. Writer (queue or topic) options: see :func:`plan_from_sink_options`."""

    @classmethod
    def name(cls) -> str:
        return "servicebus"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from federator_spark.sources.servicebus import ServiceBusStreamReader

        return ServiceBusStreamReader(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from federator_spark.plan import plan_from_sink_options
        from federator_spark.sinks.replication import ReplicationWriter

        return ReplicationWriter(plan_from_sink_options("serviceBus", self.options))


class ReplicationDataSource(DataSource):
    """A ReplicationTask's writer: option ``taskConfig`` (the task config JSON); its input is rows of
    events, or slices when option ``sliceSource`` holds the slice reader's options (JSON)."""

    @classmethod
    def name(cls) -> str:
        return "federator-replication"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from federator_spark.config import load_task_config
        from federator_spark.plan import plan_from_task
        from federator_spark.sinks.replication import ReplicationWriter

        if "taskConfig" not in self.options:
            raise ValueError("option 'taskConfig' is required")
        plan = plan_from_task(load_task_config(self.options["taskConfig"]))
        if "retainBatches" in self.options:
            plan = dataclasses.replace(plan, retain_batches=int(self.options["retainBatches"]))
        if "sliceSource" not in self.options:
            return ReplicationWriter(plan)
        if tuple(schema.fieldNames()) != SLICE_COLUMNS:
            raise ValueError(f"option 'sliceSource' needs an input of slices ({SLICE_SCHEMA})")
        return ReplicationWriter(plan, slice_reader(json.loads(self.options["sliceSource"])))


class SliceDataSource(DataSource):
    """A ReplicationTask's source: an event hub in slices (:class:`EventHubsSliceReader`, options of the
    ``eventhubs`` reader), or with option ``sliceKind`` = ``servicebus`` a Service Bus entity in slices
    (``ServiceBusSliceReader``, options of the ``servicebus`` reader)."""

    @classmethod
    def name(cls) -> str:
        return "federator-slices"

    def schema(self) -> str:
        return SLICE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return slice_reader(self.options)


def slice_reader(options: Any) -> EventHubsSliceReader | ServiceBusSliceReader:
    if options.get(SLICE_KIND, "eventhubs") == "servicebus":
        from federator_spark.sources.servicebus_slices import ServiceBusSliceReader

        return ServiceBusSliceReader(options)
    return EventHubsSliceReader(options)


# Spark keeps a pool of Python workers per environment of a registered data source (with the Python
# executable and worker module, its key for a worker factory). Read tasks get a pool of their own: a
# batch's task runs its read and its write in two workers at once, so with one pool every worker took
# turns at writing, and each kept receivers for every partition it had written (``eventhubs_streams``):
# with local[2], four workers each received every event of the source (bench.replication's latency
# run, 2026-11-28). Apart, a write task runs in one of as many workers as there are task slots.
POOL_VARIABLE = "FEDERATOR_PYTHON_POOL"
READ_POOL = "read"
_registering = threading.Lock()  # the session's environment is shared: one registration at a time


def register_in_pool(spark: SparkSession, source: type[DataSource], pool: str) -> None:
    """Register ``source`` with its tasks in Python workers of their own (``pool`` in their environment)."""
    environment = spark.sparkContext.environment
    with _registering:
        environment[POOL_VARIABLE] = pool
        try:
            spark.dataSource.register(source)
        finally:
            del environment[POOL_VARIABLE]


def register(spark: SparkSession) -> None:
    for source in (EventHubsDataSource, ServiceBusDataSource, ReplicationDataSource):
        spark.dataSource.register(source)
    register_in_pool(spark, SliceDataSource, READ_POOL)
