"""The Python data sources: ``eventhubs`` and ``servicebus`` (stream readers and writers, from string
options), registered by name; and for each ReplicationTask a pair bound to its plan (:func:`bind`): its
writer (editors, routing, several targets) and its source (an event hub or a Service Bus entity read in
slices).

A bound pair is a subclass made for the task, whose class attributes hold the plan. Spark pickles a
registered data source class with cloudpickle; a class made at run time is not importable by name, so
it travels by value, plan included, to the Python processes that instantiate it. The driver plans a task
once; the data sources never read its config again."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType

from federator_spark import worker_exit
from federator_spark.events import SCHEMA
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.servicebus_settings import SourceSettings

SliceSource = HubSourceSettings | SourceSettings  # what a task's source reads: an event hub or an entity

if TYPE_CHECKING:
    from federator_spark.plan import WritePlan
    from federator_spark.sources.eventhubs_slices import EventHubsSliceReader
    from federator_spark.sources.servicebus_slices import ServiceBusSliceReader

# Readers and writers are imported where they are made. Spark starts a Python process for a query's
# source, which imports this module, and the writers' plans (the task model, editors) would add half a
# second to the start of every query. And the processes that only make a data source and ask its schema
# (Spark's ``create_data_source`` planner, kept for reuse) would each hold the Event Hubs SDK the readers
# import, ~9 MB (docs/replication.md, "Memory of one application").

# Spark's planners unpickle these classes in Python workers forked by PySpark's own daemon, whose module is
# not a setting: importing this module is where the app's code first runs in them, and so where they learn
# to end quietly when the JVM lets them go (``worker_exit``).
worker_exit.adapt_if_forked_by_pyspark_daemon()


class EventHubsDataSource(DataSource):
    """Event Hubs. Reader options: see :class:`EventHubsStreamReader`. Writer options: see
    :func:`plan_from_sink_options` (one target, no routing)."""

    @classmethod
    def name(cls) -> str:
        return "eventhubs"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from federator_spark.sources.eventhubs import EventHubsStreamReader

        return EventHubsStreamReader(HubSourceSettings.from_options(self.options))

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

        return ServiceBusStreamReader(SourceSettings.from_options(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from federator_spark.plan import plan_from_sink_options
        from federator_spark.sinks.replication import ReplicationWriter

        return ReplicationWriter(plan_from_sink_options("serviceBus", self.options))


class ReplicationDataSource(DataSource):
    """A ReplicationTask's writer, bound to its plan (:func:`bind`); its input is rows of slices, whose
    events it reads from ``source``."""

    task: ClassVar[str]
    plan: ClassVar[WritePlan]
    source: ClassVar[SliceSource]

    @classmethod
    def name(cls) -> str:
        return f"federator-replication/{cls.task}"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from federator_spark.sinks.replication import ReplicationWriter
        from federator_spark.sources.eventhubs_slices import SLICE_COLUMNS, SLICE_SCHEMA

        if tuple(schema.fieldNames()) != SLICE_COLUMNS:
            raise ValueError(f"the replication writer needs an input of slices ({SLICE_SCHEMA})")
        return ReplicationWriter(self.plan, slice_reader(self.source))


class SliceDataSource(DataSource):
    """A ReplicationTask's source, bound to what it reads (:func:`bind`): an event hub in slices
    (:class:`EventHubsSliceReader`) or a Service Bus entity in slices (``ServiceBusSliceReader``)."""

    task: ClassVar[str]
    source: ClassVar[SliceSource]

    @classmethod
    def name(cls) -> str:
        return f"federator-slices/{cls.task}"

    def schema(self) -> str:
        from federator_spark.sources.eventhubs_slices import SLICE_SCHEMA

        return SLICE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return slice_reader(self.source)


def slice_reader(source: SliceSource) -> EventHubsSliceReader | ServiceBusSliceReader:
    if isinstance(source, SourceSettings):
        from federator_spark.sources.servicebus_slices import ServiceBusSliceReader

        return ServiceBusSliceReader(source)
    from federator_spark.sources.eventhubs_slices import EventHubsSliceReader

    return EventHubsSliceReader(source)


Bound = TypeVar("Bound", bound=DataSource)


def bound(base: type[Bound], task: str, **attributes: object) -> type[Bound]:
    """A subclass of ``base`` for ``task`` with these class attributes (it is pickled by value)."""
    namespace = {"__module__": base.__module__, "task": task, **attributes}
    return cast(type[Bound], type(base.__name__, (base,), namespace))


def bind(
    spark: SparkSession,
    task: str,
    source: SliceSource,
    plan: WritePlan,
    writer: type[ReplicationDataSource] = ReplicationDataSource,
) -> tuple[str, str]:
    """Register ``task``'s source and writer (``writer``, or a subclass of it) bound to what they read
    and write; returns their names, to read and write the query with."""
    slices = bound(SliceDataSource, task, source=source)
    replication = bound(writer, task, source=source, plan=plan)
    register_in_pool(spark, slices, READ_POOL)
    spark.dataSource.register(replication)
    return slices.name(), replication.name()


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
    """The data sources anyone may read or write with options: ``eventhubs``, ``servicebus``."""
    for source in (EventHubsDataSource, ServiceBusDataSource):
        spark.dataSource.register(source)
