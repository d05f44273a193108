"""Read tasks and write tasks in Python workers of their own (``datasources.register_in_pool``).

A batch's task runs its read and its write in two Python workers at once. In one pool every worker
took turns at writing, and a worker keeps receivers open for every partition it has written
(``sources/eventhubs_streams.py``): with ``local[2]``, four workers each received every event of the
source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from federator_spark import datasources
from federator_spark.connections import Connection
from federator_spark.plan import plan_from_sink_options
from federator_spark.sources.eventhubs_settings import HubSourceSettings

CONNECTION = "Endpoint=sb://localhost/;SharedAccessKeyName=k;SharedAccessKey=a2V5"


def _pid_sources(spark: Any) -> tuple[str, str]:
    """A reader whose rows are the pids of the workers that read them, and a writer that records, per
    write task, its own pid and the pids it was given. Defined here so that they travel by value."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        DataSourceWriter,
        InputPartition,
        WriterCommitMessage,
    )

    class PidReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(4)]

        def read(self, partition: InputPartition) -> Any:
            import os

            yield (os.getpid(),)

    class ReadPids(DataSource):
        @classmethod
        def name(cls) -> str:
            return "test-read-pids"

        def schema(self) -> str:
            return "pid long"

        def reader(self, schema: Any) -> DataSourceReader:
            return PidReader()

    class PidWriter(DataSourceWriter):
        def __init__(self, directory: str) -> None:
            self.directory = directory

        def write(self, rows: Any) -> WriterCommitMessage:
            import os
            import uuid

            read = sorted({row.pid for row in rows})
            record = {"writer": os.getpid(), "readers": read}
            Path(self.directory, uuid.uuid4().hex).write_text(json.dumps(record))
            return WriterCommitMessage()

    class WritePids(DataSource):
        @classmethod
        def name(cls) -> str:
            return "test-write-pids"

        def writer(self, schema: Any, overwrite: bool) -> DataSourceWriter:
            return PidWriter(self.options["directory"])

    datasources.register_in_pool(spark, ReadPids, datasources.READ_POOL)
    spark.dataSource.register(WritePids)
    return ReadPids.name(), WritePids.name()


def test_a_task_that_reads_and_writes_in_python_never_writes_in_a_worker_that_reads(spark, tmp_path):
    reader, writer = _pid_sources(spark)

    for _ in range(6):  # enough jobs for a shared pool to hand a reading worker a write
        frame = spark.read.format(reader).load()
        frame.write.format(writer).mode("append").option("directory", str(tmp_path)).save()

    records = [json.loads(path.read_text()) for path in tmp_path.iterdir()]
    writers = {record["writer"] for record in records}
    readers = {pid for record in records for pid in record["readers"]}
    assert len(records) == 24  # four write tasks a job
    assert writers and readers
    assert not writers & readers
    assert len(writers) <= 2 and len(readers) <= 2  # a pool each, as many workers as task slots


def test_a_task_reads_its_source_in_the_read_pool_and_writes_in_the_shared_one(spark):
    """A task's source of slices is registered in the read pool; its writer in the shared one."""
    source = HubSourceSettings(Connection(connection_string=CONNECTION), "orders")
    plan = plan_from_sink_options(
        "eventHub", {"connection": source.connection.to_option(), "eventHubName": "copy"}
    )
    reader, writer = datasources.bind(spark, "default/pools", source, plan)
    manager = spark._jsparkSession.sessionState().dataSourceManager()

    def environment(name: str) -> dict[str, str]:
        found = manager.lookupDataSource(name)
        return dict(found.dataSourceCls().envVars())

    assert (reader, writer) == ("federator-slices/default/pools", "federator-replication/default/pools")
    assert environment(reader)[datasources.POOL_VARIABLE] == datasources.READ_POOL
    assert datasources.POOL_VARIABLE not in environment(writer)
    assert datasources.POOL_VARIABLE not in spark.sparkContext.environment  # restored after registering
