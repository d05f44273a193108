"""A Spark session with the app's settings in a process of its own, for tests that watch the Python processes
its JVM starts for Spark's data source planners (the suite's own session has long done what they look at)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.processes import descendants

# The session's script begins so: a reader of one row for the data source the test defines after it.
HEAD = """
import sys
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from federator_spark import spark_settings

class Rows(DataSourceReader):
    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        yield (1,)
"""

# And ends so, once it has used its data source: the JVM's pid, then it waits to be told to stop.
TAIL = """
print(spark.sparkContext._gateway.proc.pid, flush=True)
sys.stdin.read()
spark.stop()
"""

BUILDER = """
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
spark = spark_settings.configured(builder).getOrCreate()
"""


@contextmanager
def session(body: str, log: Path, *args: str) -> Iterator[int]:
    """Run ``HEAD + body + TAIL`` (``body`` defines and uses a data source on ``spark``, made by ``BUILDER``)
    with ``args``; yields its JVM's pid once it has used it, and stops it after."""
    python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    with (
        log.open("w") as errors,
        subprocess.Popen(
            [sys.executable, "-c", HEAD + BUILDER + body + TAIL, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env={**os.environ, **python, "SPARK_LOCAL_IP": "127.0.0.1"},
        ) as running,
    ):
        assert running.stdin is not None and running.stdout is not None
        try:
            line = running.stdout.readline()
            assert line.strip().isdigit(), log.read_text()[-3000:]
            yield int(line)
        finally:
            running.stdin.close()  # the session stops
            try:
                running.wait(120)
            except subprocess.TimeoutExpired:
                running.kill()


def planner_processes(jvm: int, module: str) -> tuple[int, int]:
    """The daemons of the planner ``module`` (children of the JVM: ``python -m pyspark.daemon <module>``) and
    the workers they forked that have not ended, counted."""
    daemons = workers = 0
    for pid in descendants(jvm):
        try:
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        if "pyspark.daemon" in command and module in command:
            daemons, workers = (daemons + 1, workers) if parent == jvm else (daemons, workers + 1)
    return daemons, workers
