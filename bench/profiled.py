"""The replication writer under cProfile, for ``bench/replication.py --profile DIR``.

Each Spark write task dumps ``<DIR>/write-<pid>-<n>.prof``; combine them with ``python -m pstats`` or
``pstats.Stats(*files)``. A task with an Event Hubs source reads its slice's events inside the write
task (``federator_spark.sources.eventhubs_slices``), so the profile covers receiving, editors and
sending; it covers the task's own thread only, not the SDK receiver threads beside it (use py-spy for
those). Imported by the Spark Python workers, which find this directory on PYTHONPATH.
"""

from __future__ import annotations

import cProfile
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSourceStreamWriter
from pyspark.sql.types import StructType

from federator_spark import datasources, pipeline
from federator_spark.pipeline import TaskPlan
from federator_spark.sinks.replication import ReplicationWriter, TaskReports

_counter = itertools.count()


class ProfiledWriter(ReplicationWriter):
    def write(self, iterator: Iterator[Any]) -> TaskReports:
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            return super().write(iterator)
        finally:
            profiler.disable()
            directory = Path(os.environ["FEDERATOR_BENCH_PROFILE_DIR"])
            directory.mkdir(parents=True, exist_ok=True)
            profiler.dump_stats(directory / f"write-{os.getpid()}-{next(_counter)}.prof")


class ProfiledReplication(datasources.ReplicationDataSource):
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        writer = super().streamWriter(schema, overwrite)
        assert isinstance(writer, ReplicationWriter)
        return ProfiledWriter(writer.plan, writer.slices)


def start(spark: SparkSession, task: TaskPlan, *, available_now: bool) -> Any:
    """``pipeline.start`` with the profiled writer."""
    return pipeline.start(spark, task, available_now=available_now, writer=ProfiledReplication)
