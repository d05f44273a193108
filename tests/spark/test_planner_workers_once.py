"""The Python worker of Spark's lookup of registered data sources, which a session runs once, is not kept
after its use (``worker_exit.USED_ONCE_PLANNERS``, through ``pyspark_federator``): the JVM stops it at once
instead of keeping it idle a minute (docs/replication.md, "Memory of one application")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.polling import eventually
from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.processes import descendants

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]

LOOKUP = "pyspark.sql.worker.lookup_data_sources"

# A session of its own (the suite's has done its lookup long before): the app's settings, a data source
# read by name, which is when Spark runs its lookup; then its JVM's pid, and it waits to be told to stop.
SESSION = """
import sys
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from federator_spark import spark_settings

class Rows(DataSourceReader):
    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        yield (1,)

class One(DataSource):
    @classmethod
    def name(cls):
        return "test-one-row"

    def schema(self):
        return "n int"

    def reader(self, schema):
        return Rows()

builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
spark = spark_settings.configured(builder).getOrCreate()
spark.dataSource.register(One)
assert spark.read.format("test-one-row").load().collect()[0].n == 1
print(spark.sparkContext._gateway.proc.pid, flush=True)
sys.stdin.read()
spark.stop()
"""


def _command(pid: int) -> tuple[int, list[str]]:
    """A process's parent and command line; (0, []) once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(stat[1]), Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except (OSError, IndexError, ValueError):
        return 0, []


def lookup_processes(jvm: int) -> tuple[int, int]:
    """The lookup's daemon (a child of the JVM, ``python -m pyspark.daemon <module>``) and the workers it
    forked that have not ended, counted."""
    daemons = workers = 0
    for pid in descendants(jvm):
        parent, command = _command(pid)
        if "pyspark.daemon" in command and LOOKUP in command:
            if parent == jvm:
                daemons += 1
            else:
                workers += 1
    return daemons, workers


def test_the_worker_of_the_session_s_data_source_lookup_is_stopped_after_its_use(tmp_path: Path) -> None:
    python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    log = tmp_path / "session.log"
    with (
        log.open("w") as errors,
        subprocess.Popen(
            [sys.executable, "-c", SESSION],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env={**os.environ, **python, "SPARK_LOCAL_IP": "127.0.0.1"},
        ) as session,
    ):
        assert session.stdin is not None and session.stdout is not None
        try:
            line = session.stdout.readline()
            assert line.strip().isdigit(), log.read_text()[-3000:]
            jvm = int(line)

            assert lookup_processes(jvm)[0] == 1  # the lookup ran, in a worker its daemon forked
            # Kept, the worker would stay a minute (PythonWorkerFactory's idle timeout, checked every 10 s).
            stayed = "the lookup's worker stayed after its use"
            eventually(lambda: lookup_processes(jvm) == (1, 0), 20, stayed)
        finally:
            session.stdin.close()  # the session stops
            try:
                session.wait(120)
            except subprocess.TimeoutExpired:
                session.kill()
