"""Plans a ReplicationTask once, on the driver, and starts its streaming query."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import UTC

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from federator_contract.applog import started_marker
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.taskconfig import TaskConfig
from federator_spark import datasources, following, source_binding
from federator_spark.commits import CommitLog
from federator_spark.config import checkpoint_layout
from federator_spark.datasources import ReplicationDataSource, SliceSource
from federator_spark.plan import RETAIN_BATCHES, WritePlan
from federator_spark.planning import connection_for, plan_from_task
from federator_spark.sources.eventhubs_settings import HubSourceSettings, parse_time
from federator_spark.sources.servicebus_settings import SourceSettings

logger = logging.getLogger(__name__)

CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
# Spark's default manager (FileContext-based) took 55-80 ms per offset or commit log entry on a local disk
# here, the FileSystem-based one 13-16 ms, with the same atomicity on a local file system (write a
# temporary file, then rename it; both check that the name is free first). Two entries per batch, so about
# 100 ms of every batch: a third of the latency at 1,000 events/s. Checkpoints are always local
# (federator_contract.checks.checkpoint).
FILE_SYSTEM_CHECKPOINTS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


@dataclass(frozen=True)
class TaskPlan:
    """One task, planned once on the driver from its config: what its query reads and writes, where its
    files go. Its data sources are bound to it (``datasources.bind``); nothing reads the config again."""

    namespace: str
    name: str
    layout: CheckpointLayout
    source: SliceSource
    write: WritePlan
    trigger_seconds: float
    """0: the next batch as soon as the one before ends (a member of a shared application may be paced:
    ``federator_spark.scheduling``)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def plan_task(config: TaskConfig) -> TaskPlan:
    """Fails fast, on the driver, for specs the app cannot run (TaskConfigError)."""
    layout = checkpoint_layout(config)
    write = plan_from_task(config, layout)
    source = source_settings(config, layout)
    # Before anything reads: positions are applied to the source they were taken from only.
    source_binding.bind(layout, source, config.reset_positions)
    return TaskPlan(
        namespace=config.namespace,
        name=config.name,
        layout=layout,
        source=source,
        write=write,
        trigger_seconds=config.spec.runtime.trigger_interval_seconds,
    )


def source_settings(config: TaskConfig, layout: CheckpointLayout) -> SliceSource:
    """What the task's source reads; an outage of it is reported beside the task's status."""
    spec = config.spec
    limit = spec.runtime.max_events_per_trigger
    if spec.source.service_bus is not None:
        return _servicebus_settings(config, layout)
    source = spec.source.event_hub
    assert source is not None  # the spec model requires exactly one source
    start = source.start_position.enqueued_time
    return HubSourceSettings(
        connection=connection_for(config, source.connection),
        event_hub=source.event_hub_name,
        consumer_group=source.consumer_group,
        partition_ids=tuple(source.partition_ids) if source.partition_ids else None,
        start_position=source.start_position.position,
        # In the standard library's zone: the settings travel pickled, and pydantic's zone would import
        # pydantic in every process that reads them.
        start_time=start.astimezone(UTC) if start is not None else None,
        max_events=limit,
        status_file=str(layout.status_file),
        start_file=str(layout.start_positions_file),
    )


def _servicebus_settings(config: TaskConfig, layout: CheckpointLayout) -> SourceSettings:
    spec = config.spec
    source = spec.source.service_bus
    assert source is not None
    limit = source.max_messages_per_batch
    if spec.runtime.max_events_per_trigger is not None:
        limit = min(limit, spec.runtime.max_events_per_trigger)
    return SourceSettings(
        connection=connection_for(config, source.connection),
        queue=source.queue_name,
        topic=source.topic_name,
        subscription=source.subscription_name if source.queue_name is None else None,
        dead_letter=source.sub_queue == "deadLetter",
        max_messages=limit,
        layout=layout,  # the spool and the commit log that decides completion: the query's
        status_file=str(layout.status_file),
    )


def tidy_commit_records(plan: WritePlan) -> None:
    """Records a crash left behind before pruning them (or that an earlier version kept) go at start-up."""
    if plan.state_dir is not None:
        removed = CommitLog(plan.state_dir).tidy(plan.retain_batches)
        if removed:
            logger.info("removed %d commit records no restart needs", removed)


def use_file_system_checkpoints(spark: SparkSession) -> None:
    """Write Spark's checkpoint logs through the FileSystem API, unless the application chose a manager."""
    if spark.conf.get(CHECKPOINT_FILE_MANAGER, None) is None:
        spark.conf.set(CHECKPOINT_FILE_MANAGER, FILE_SYSTEM_CHECKPOINTS)


def task_slots(spark: SparkSession) -> int:
    """How many tasks the application runs at once: its executors' cores as configured (in cluster
    mode executors may still be starting when the query starts), else Spark's default parallelism."""
    conf = spark.sparkContext.getConf()
    instances, cores = conf.get("spark.executor.instances"), conf.get("spark.executor.cores")
    if instances and cores:
        return int(instances) * int(cores)
    return spark.sparkContext.defaultParallelism


def starting_source(spark: SparkSession, task: TaskPlan, resume: str | None) -> SliceSource:
    """The task's source as this start reads it: an event hub in one wave of tasks per batch (unless the
    plan says how many: a shared application's member writes a bounded batch in one task), from
    ``resume`` (where a followed member's checkpoint starts after a switch: Spark asks for a start
    position until a batch is committed; ``following.first_batch_start`` keeps a member's first batch at
    the start it was planned from). A Service Bus entity is read as it is."""
    source = task.source
    if not isinstance(source, HubSourceSettings):
        return source
    source = dataclasses.replace(source, slice_tasks=source.slice_tasks or task_slots(spark))
    if resume is not None:
        source = dataclasses.replace(source, start_position="enqueuedTime", start_time=parse_time(resume))
    return source


def start(
    spark: SparkSession,
    task: TaskPlan,
    *,
    available_now: bool = False,
    writer: type[ReplicationDataSource] = ReplicationDataSource,
) -> StreamingQuery:
    """Start the task's query; ``available_now`` processes what is there and stops (tests, catch-up).
    ``writer``: the data source that writes it (a subclass, to measure the writer: ``bench.profiled``)."""
    use_file_system_checkpoints(spark)
    # Commit records are kept as long as Spark keeps its own batches.
    retain_batches = spark.conf.get("spark.sql.streaming.minBatchesToRetain") or str(RETAIN_BATCHES)
    write = dataclasses.replace(task.write, retain_batches=int(retain_batches))
    tidy_commit_records(write)
    resume = following.prepare(write.following) if write.following is not None else None
    # Read in slices: the write tasks read the events themselves (sources/eventhubs_slices.py, in one wave
    # of tasks; sources/servicebus_slices.py, from the spool).
    source = starting_source(spark, task, resume)
    source_name, writer_name = datasources.bind(spark, task.key, source, write, writer)
    stream = (
        spark.readStream.format(source_name)
        .load()
        .writeStream.format(writer_name)
        .queryName(f"{task.namespace}.{task.name}")
        .option("checkpointLocation", task.layout.query_location)
    )
    if available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{round(task.trigger_seconds * 1000)} milliseconds")
    query = stream.start()
    logger.info("%s%s)", started_marker(task.namespace, task.name), query.id)
    return query
