"""Builds and starts the streaming query of one ReplicationTask."""

from __future__ import annotations

import json
import logging

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from federator_contract.applog import started_marker
from federator_contract.taskconfig import TaskConfig
from federator_spark import datasources, following
from federator_spark.commits import CommitLog
from federator_spark.plan import RETAIN_BATCHES, WritePlan, connection_for, plan_from_task

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


def source_options(config: TaskConfig) -> tuple[str, dict[str, str]]:
    """The data source reading the task's source, and its options."""
    spec = config.spec
    if spec.source.service_bus is not None:
        return "servicebus", _servicebus_options(config)
    source = spec.source.event_hub
    assert source is not None  # the spec model requires exactly one source
    options = {
        "connection": connection_for(config, source.connection).to_option(),
        "eventHubName": source.event_hub_name,
        "consumerGroup": source.consumer_group,
        "startPosition": source.start_position.position,
    }
    if source.start_position.enqueued_time is not None:
        options["startEnqueuedTime"] = source.start_position.enqueued_time.isoformat()
    if source.partition_ids:
        options["partitionIds"] = ",".join(source.partition_ids)
    if spec.runtime.max_events_per_trigger is not None:
        options["maxEventsPerTrigger"] = str(spec.runtime.max_events_per_trigger)
    return "eventhubs", options


def _servicebus_options(config: TaskConfig) -> dict[str, str]:
    spec = config.spec
    source = spec.source.service_bus
    assert source is not None
    limit = source.max_messages_per_batch
    if spec.runtime.max_events_per_trigger is not None:
        limit = min(limit, spec.runtime.max_events_per_trigger)
    options = {
        "connection": connection_for(config, source.connection).to_option(),
        "subQueue": source.sub_queue,
        "maxMessagesPerBatch": str(limit),
        # The spool and the commit log that decides completion live under the query's checkpoint.
        "checkpointLocation": config.query_checkpoint_location,
    }
    if source.queue_name is not None:
        options["queueName"] = source.queue_name
    else:
        assert source.topic_name is not None and source.subscription_name is not None
        options["topicName"] = source.topic_name
        options["subscriptionName"] = source.subscription_name
    return options


def tidy_commit_records(plan: WritePlan, retain_batches: int) -> None:
    """Records a crash left behind before pruning them (or that an earlier version kept) go at start-up."""
    if plan.state_dir is not None:
        removed = CommitLog(plan.state_dir).tidy(retain_batches)
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


def start(spark: SparkSession, config: TaskConfig, *, available_now: bool = False) -> StreamingQuery:
    """Start the task's query; ``available_now`` processes what is there and stops (tests, catch-up)."""
    datasources.register(spark)
    use_file_system_checkpoints(spark)
    plan = plan_from_task(config)  # fails fast, on the driver, for specs the app cannot run
    # Commit records are kept as long as Spark keeps its own batches.
    retain_batches = spark.conf.get("spark.sql.streaming.minBatchesToRetain") or str(RETAIN_BATCHES)
    tidy_commit_records(plan, int(retain_batches))
    source_format, options = source_options(config)
    if plan.status_file is not None:
        options["statusFile"] = plan.status_file  # where the source reports an outage
    if plan.following is not None:
        resume = following.prepare(plan.following)
        if resume is not None and source_format == "eventhubs":
            # Spark asks for a start position only when the member's checkpoint has none.
            options.update(startPosition="enqueuedTime", startEnqueuedTime=resume)
    writer_options = {
        "taskConfig": config.to_json(),
        "checkpointLocation": config.query_checkpoint_location,
        "retainBatches": retain_batches,
    }
    # Read in slices: the write tasks read the events themselves (sources/eventhubs_slices.py, in one wave
    # of tasks; sources/servicebus_slices.py, from the spool).
    if source_format == "eventhubs":
        options["sliceTasks"] = str(task_slots(spark))
    else:
        options[datasources.SLICE_KIND] = source_format
    source_format = datasources.SliceDataSource.name()
    writer_options["sliceSource"] = json.dumps(options)
    reader = spark.readStream.format(source_format).options(**options).load()
    writer = (
        reader.writeStream.format(datasources.ReplicationDataSource.name())
        .queryName(f"{config.namespace}.{config.name}")
        .options(**writer_options)
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{config.spec.runtime.trigger_interval_seconds} seconds")
    query = writer.start()
    logger.info("%s%s)", started_marker(config.namespace, config.name), query.id)
    return query
