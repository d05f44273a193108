"""The Python data sources, registered by name: ``eventhubs`` and ``servicebus`` (stream readers and
writers) and ``federator-replication`` (the whole task's writer: editors,
routing, several targets)."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType

from federator_spark.config import load_task_config
from federator_spark.events import SCHEMA
from federator_spark.plan import plan_from_sink_options, plan_from_task
from federator_spark.sinks.replication import ReplicationWriter
from federator_spark.sources.eventhubs import EventHubsStreamReader
from federator_spark.sources.servicebus import ServiceBusStreamReader


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
        return ServiceBusStreamReader(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return ReplicationWriter(plan_from_sink_options("serviceBus", self.options))


class ReplicationDataSource(DataSource):
    """Writes a ReplicationTask's targets; option ``taskConfig`` is the task config JSON."""

    @classmethod
    def name(cls) -> str:
        return "federator-replication"

    def schema(self) -> str:
        return SCHEMA

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        if "taskConfig" not in self.options:
            raise ValueError("option 'taskConfig' is required")
        return ReplicationWriter(plan_from_task(load_task_config(self.options["taskConfig"])))


def register(spark: SparkSession) -> None:
    for source in (EventHubsDataSource, ServiceBusDataSource, ReplicationDataSource):
        spark.dataSource.register(source)
