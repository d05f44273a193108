"""The Python data sources, registered by name: ``eventhubs`` and ``servicebus`` (stream readers and
writers) and ``federator-replication`` (the whole task's writer: editors, routing, several targets;
and its source, an event hub or a Service Bus entity read in slices)."""

from __future__ import annotations

import dataclasses
import json
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
    """A ReplicationTask. Writer: option ``taskConfig`` (the task config JSON); its input is rows of
    events, or slices when option ``sliceSource`` holds the slice reader's options (JSON). Reader: an event
    hub in slices (:class:`EventHubsSliceReader`, options of the ``eventhubs`` reader), or with option
    ``sliceKind`` = ``servicebus`` a Service Bus entity in slices (``ServiceBusSliceReader``, options of
    the ``servicebus`` reader)."""

    @classmethod
    def name(cls) -> str:
        return "federator-replication"

    def schema(self) -> str:
        return SLICE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return slice_reader(self.options)

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


def slice_reader(options: Any) -> EventHubsSliceReader | ServiceBusSliceReader:
    if options.get(SLICE_KIND, "eventhubs") == "servicebus":
        from federator_spark.sources.servicebus_slices import ServiceBusSliceReader

        return ServiceBusSliceReader(options)
    return EventHubsSliceReader(options)


def register(spark: SparkSession) -> None:
    for source in (EventHubsDataSource, ServiceBusDataSource, ReplicationDataSource):
        spark.dataSource.register(source)
