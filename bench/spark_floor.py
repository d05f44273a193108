"""What a micro-batch costs Spark itself on this machine, before any Federator code: the floor under the
replication app's latency.

    .venv/bin/python -m bench.spark_floor [--seconds 25] [--rate 1000]

Spark's ``rate`` source at ``--rate`` rows/s, batches back to back (trigger 0), on ``local[2]``, into:

* ``noop``: Spark's own sink, no Python at all;
* ``python-sink``: a Python Data Source stream writer whose tasks only count their rows and whose commit
  does nothing: what any Python sink pays per batch (its tasks in Python workers, its commit in a Python
  process of the driver);

each with Spark's default checkpoint file manager (FileContext-based) and with the FileSystem-based one
the replication app uses (``federator_spark.pipeline``), on Hadoop's local file system (a ``chmod``
process for each file it creates); then, in a second Spark process (the file system is fixed for a JVM's
life), the FileSystem-based manager on the app's own (``spark-apps/jvm``, ``federator_spark.spark_settings``).
Printed: the median and 90th percentile of each ``durationMs`` phase over the last batches. The last line
printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from bench.processes import load
from bench.replication_latency import percentile
from federator_spark.pipeline import CHECKPOINT_FILE_MANAGER, FILE_SYSTEM_CHECKPOINTS
from federator_spark.spark_settings import FILE_SYSTEM_SETTING, LOCAL_FILE_SYSTEM

logger = logging.getLogger("bench")

PHASES = ("triggerExecution", "addBatch", "walCommit", "commitOffsets", "queryPlanning", "latestOffset")
MANAGERS = {
    "file-context (Spark's default)": None,
    "file-system (the app's)": FILE_SYSTEM_CHECKPOINTS,
}
# The local file system a Spark process runs on, and the checkpoint managers measured on it.
FILE_SYSTEMS: dict[str, tuple[str, dict[str, str | None]]] = {
    "hadoop's": ("org.apache.hadoop.fs.LocalFileSystem", MANAGERS),
    "the app's": (LOCAL_FILE_SYSTEM, {"file-system (the app's)": FILE_SYSTEM_CHECKPOINTS}),
}


class CountingWriter(DataSourceStreamWriter):
    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to commit: the cost measured is Spark's."""


class CountingSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench-counting-sink"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return CountingWriter()


def measure(spark: SparkSession, sink: str, manager: str | None, args: argparse.Namespace) -> dict[str, Any]:
    if manager is None:
        spark.conf.unset(CHECKPOINT_FILE_MANAGER)
    else:
        spark.conf.set(CHECKPOINT_FILE_MANAGER, manager)
    with tempfile.TemporaryDirectory(prefix="federator-floor-") as tmp:
        stream = spark.readStream.format("rate").option("rowsPerSecond", args.rate)
        writer = stream.option("numPartitions", 2).load().writeStream
        writer = writer.format("noop" if sink == "noop" else CountingSink.name())
        query = writer.option("checkpointLocation", f"file://{Path(tmp) / 'checkpoint'}").start()
        time.sleep(args.seconds)
        progress = [json.loads(p.json) for p in query.recentProgress]
        query.stop()
    batches = [p["durationMs"] for p in progress[len(progress) // 3 :]]  # warm ones
    return {"batches": len(batches), **{phase: spread(batches, phase) for phase in PHASES}}


def spread(batches: list[dict[str, float]], phase: str) -> dict[str, float | None]:
    ordered = sorted(batch.get(phase, 0) for batch in batches)
    return {"p50": percentile(ordered, 0.5), "p90": percentile(ordered, 0.9)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=25, help="seconds per configuration")
    parser.add_argument("--rate", type=int, default=1000, help="rows/s")
    parser.add_argument("--file-system", choices=FILE_SYSTEMS, help=argparse.SUPPRESS)  # one process's share
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    if args.file_system is not None:
        print(json.dumps(measure_on(args.file_system, args)))
        return
    loads = {"start": load()}
    results: dict[str, dict[str, Any]] = {}
    for file_system in FILE_SYSTEMS:
        results.update(in_own_process(file_system, args))
    loads["end"] = load()
    print(
        json.dumps({"rate": args.rate, "seconds": args.seconds, "batch_ms": results, "load_average": loads})
    )


def in_own_process(file_system: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    command = [sys.executable, "-m", "bench.spark_floor", "--seconds", str(args.seconds)]
    command += ["--rate", str(args.rate), "--file-system", file_system]
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    figures: dict[str, dict[str, Any]] = json.loads(output.strip().splitlines()[-1])
    return figures


def measure_on(file_system: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    implementation, managers = FILE_SYSTEMS[file_system]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.appName("federator-bench-spark-floor")
        .master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config(FILE_SYSTEM_SETTING, implementation)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(CountingSink)
    # Not counted: each process's first query also pays for the JVM compiling Spark's code.
    measure(spark, "python-sink", FILE_SYSTEM_CHECKPOINTS, args)
    results: dict[str, dict[str, Any]] = {}
    for sink in ("noop", "python-sink"):
        for label, manager in managers.items():
            key = f"{sink}, {label}, {file_system} local file system"
            results[key] = figures = measure(spark, sink, manager, args)
            logger.info("%s: %s (load %s)", key, figures, load())
    spark.stop()
    return results


if __name__ == "__main__":
    main()
