"""The replication data sources under cProfile, for ``bench/replication.py --profile DIR``.

Each Spark read and write task dumps ``<DIR>/<read|write>-<pid>-<n>.prof``; combine them with
``python -m pstats`` or ``pstats.Stats(*files)``. The profile covers the worker's whole thread while
the task runs, so it includes PySpark's own row/Arrow conversion around our generator and writer.
Imported by the Spark Python workers, which find this directory on PYTHONPATH.
"""

from __future__ import annotations

import cProfile
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSourceStreamReader, DataSourceStreamWriter, InputPartition
from pyspark.sql.types import StructType

from federator_spark import datasources, pipeline
from federator_spark.sinks.replication import ReplicationWriter, TaskReport
from federator_spark.sources.eventhubs import EventHubsStreamReader

_counter = itertools.count()


def _dump(profiler: cProfile.Profile, kind: str) -> None:
    directory = Path(os.environ["FEDERATOR_BENCH_PROFILE_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(directory / f"{kind}-{os.getpid()}-{next(_counter)}.prof")


class ProfiledReader(EventHubsStreamReader):
    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            yield from super().read(partition)
        finally:
            profiler.disable()
            _dump(profiler, "read")


class ProfiledWriter(ReplicationWriter):
    def write(self, iterator: Iterator[Any]) -> TaskReport:
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            return super().write(iterator)
        finally:
            profiler.disable()
            _dump(profiler, "write")


class ProfiledEventHubs(datasources.EventHubsDataSource):
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ProfiledReader(self.options)


class ProfiledReplication(datasources.ReplicationDataSource):
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        writer = super().streamWriter(schema, overwrite)
        assert isinstance(writer, ReplicationWriter)
        return ProfiledWriter(writer.plan)


def register(spark: SparkSession) -> None:
    """Register the profiled twins under the real names (later registrations win)."""
    for source in (ProfiledEventHubs, ProfiledReplication):
        spark.dataSource.register(source)


def start(spark: SparkSession, config: Any, *, available_now: bool) -> Any:
    """``pipeline.start`` with the profiled data sources (it registers the real ones first)."""
    real = pipeline.register
    pipeline.register = register  # type: ignore[assignment]
    try:
        return pipeline.start(spark, config, available_now=available_now)
    finally:
        pipeline.register = real  # type: ignore[assignment]
