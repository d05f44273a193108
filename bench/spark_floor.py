"""What a micro-batch costs Spark itself on this machine, before any Federator code: the floor under the
replication app's latency.

    .venv/bin/python -m bench.spark_floor [--seconds 25] [--rate 1000]

Spark's ``rate`` source at ``--rate`` rows/s, batches back to back (trigger 0), on ``local[2]``, into:

* ``noop``: Spark's own sink, no Python at all;
* ``python-sink``: a Python Data Source stream writer whose tasks only count their rows and whose commit
  does nothing: what any Python sink pays per batch (its tasks in Python workers, its commit in a Python
  process of the driver);

each with Spark's default checkpoint file manager (FileContext-based) and with the FileSystem-based one
the replication app uses (``federator_spark.pipeline``). A Spark process keeps its local file system and
the way its Python processes reach the JVM for life, so three run one after the other:

* Hadoop's local file system (a ``chmod`` process for each file it creates), Python over TCP;
* the app's local file system (``spark-apps/jvm``), Python over TCP;
* the app's local file system, Python over Unix domain sockets: the app's settings
  (``federator_spark.spark_settings``).

Printed: the median and 90th percentile of each ``durationMs`` phase over the last batches and, for the
Python sink, how long a write task waits from ``write()`` to its first row and how long after the batch's
last write the driver's commit begins. The last line printed is a JSON summary.
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
from federator_spark.spark_settings import FILE_SYSTEM_SETTING, LOCAL_FILE_SYSTEM, UNIX_SOCKETS_SETTING

logger = logging.getLogger("bench")

PHASES = ("triggerExecution", "addBatch", "walCommit", "commitOffsets", "queryPlanning", "latestOffset")
APPS_MANAGER: dict[str, str | None] = {"file-system (the app's)": FILE_SYSTEM_CHECKPOINTS}
MANAGERS = {"file-context (Spark's default)": None, **APPS_MANAGER}
# The settings each Spark process starts with, and the checkpoint managers measured in it.
PROCESSES: dict[str, tuple[dict[str, str], dict[str, str | None]]] = {
    "hadoop's local file system, tcp": (
        {FILE_SYSTEM_SETTING: "org.apache.hadoop.fs.LocalFileSystem", UNIX_SOCKETS_SETTING: "false"},
        MANAGERS,
    ),
    "the app's local file system, tcp": (
        {FILE_SYSTEM_SETTING: LOCAL_FILE_SYSTEM, UNIX_SOCKETS_SETTING: "false"},
        APPS_MANAGER,
    ),
    "the app's local file system, unix sockets": (
        {FILE_SYSTEM_SETTING: LOCAL_FILE_SYSTEM, UNIX_SOCKETS_SETTING: "true"},
        APPS_MANAGER,
    ),
}


class CountingWriter(DataSourceStreamWriter):
    """Counts rows, and notes in ``times`` when each task's ``write()`` began, saw its first row and
    ended, and when the driver's ``commit`` came (a line each, appended: tasks and commits run in
    processes of their own)."""

    def __init__(self, times: str) -> None:
        self.times = times

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        began, first = time.time(), None
        for _ in iterator:
            first = first or time.time()
        self.note(f"task {began} {first or time.time()} {time.time()}")
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.note(f"commit {time.time()}")

    def note(self, line: str) -> None:
        with open(self.times, "a") as times:
            times.write(line + "\n")


class CountingSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench-counting-sink"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return CountingWriter(self.options["times"])


def measure(spark: SparkSession, sink: str, manager: str | None, args: argparse.Namespace) -> dict[str, Any]:
    if manager is None:
        spark.conf.unset(CHECKPOINT_FILE_MANAGER)
    else:
        spark.conf.set(CHECKPOINT_FILE_MANAGER, manager)
    with tempfile.TemporaryDirectory(prefix="federator-floor-") as tmp:
        stream = spark.readStream.format("rate").option("rowsPerSecond", args.rate)
        writer = stream.option("numPartitions", 2).load().writeStream
        writer = writer.format("noop" if sink == "noop" else CountingSink.name())
        times = Path(tmp) / "times"
        writer = writer.option("times", str(times))
        query = writer.option("checkpointLocation", f"file://{Path(tmp) / 'checkpoint'}").start()
        time.sleep(args.seconds)
        progress = [json.loads(p.json) for p in query.recentProgress]
        query.stop()
        python = python_waits(times.read_text().splitlines()) if times.exists() else {}
    batches = [p["durationMs"] for p in progress[len(progress) // 3 :]]  # warm ones
    return {"batches": len(batches), **{phase: spread(batches, phase) for phase in PHASES}, **python}


def python_waits(lines: list[str]) -> dict[str, dict[str, float | None]]:
    """The Python sink's waits over the warm batches, from its notes (a batch's tasks, then its commit)."""
    first_rows: list[float] = []
    commits: list[float] = []
    last_write = 0.0
    for words in (line.split() for line in lines[len(lines) // 3 :]):
        if words[0] == "task":
            began, first, ended = map(float, words[1:])
            first_rows.append((first - began) * 1000)
            last_write = max(last_write, ended)
        elif last_write:
            commits.append((float(words[1]) - last_write) * 1000)
            last_write = 0.0
    return {"firstRowWait": spread_of(first_rows), "lastWriteToCommit": spread_of(commits)}


def spread(batches: list[dict[str, float]], phase: str) -> dict[str, float | None]:
    return spread_of([batch.get(phase, 0) for batch in batches])


def spread_of(values: list[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    return {"p50": percentile(ordered, 0.5), "p90": percentile(ordered, 0.9)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=25, help="seconds per configuration")
    parser.add_argument("--rate", type=int, default=1000, help="rows/s")
    parser.add_argument("--process", choices=PROCESSES, help=argparse.SUPPRESS)  # one process's share
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    if args.process is not None:
        print(json.dumps(measure_in(args.process, args)))
        return
    loads = {"start": load()}
    results: dict[str, dict[str, Any]] = {}
    for process in PROCESSES:
        results.update(in_own_process(process, args))
    loads["end"] = load()
    print(
        json.dumps({"rate": args.rate, "seconds": args.seconds, "batch_ms": results, "load_average": loads})
    )


def in_own_process(process: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    command = [sys.executable, "-m", "bench.spark_floor", "--seconds", str(args.seconds)]
    command += ["--rate", str(args.rate), "--process", process]
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    figures: dict[str, dict[str, Any]] = json.loads(output.strip().splitlines()[-1])
    return figures


def measure_in(process: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    settings, managers = PROCESSES[process]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("federator-bench-spark-floor").master("local[2]")
    builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(CountingSink)
    # Not counted: each process's first query also pays for the JVM compiling Spark's code.
    measure(spark, "python-sink", FILE_SYSTEM_CHECKPOINTS, args)
    results: dict[str, dict[str, Any]] = {}
    for sink in ("noop", "python-sink"):
        for label, manager in managers.items():
            key = f"{sink}, {label}, {process}"
            results[key] = figures = measure(spark, sink, manager, args)
            logger.info("%s: %s (load %s)", key, figures, load())
    spark.stop()
    return results


if __name__ == "__main__":
    main()
