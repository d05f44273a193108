"""Entry point of the replication Spark application: runs one ReplicationTask.

spark-submit replicate.py --task-config /etc/federator/task/task.json   (the image's wrapper)
python -m federator_spark --task-config task.json --master local[2] [--available-now]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType
from typing import Any

from pyspark.sql import SparkSession

from federator_spark import logs, metrics, pipeline, spark_settings
from federator_spark.companions import Companions
from federator_spark.config import load_task_config
from federator_spark.translation.planning import translation_plan

logger = logging.getLogger("federator.replicate")


class Stopper:
    """SIGTERM stops the query (Spark cancels a batch in flight; it is replayed at the next start) from a
    thread of its own: the main thread is inside a py4j call (``awaitTermination``) that must return
    normally rather than be re-entered from a signal handler. Spark itself is stopped only once that
    thread is done, so nothing calls into a stopped SparkContext. A signal before the query starts keeps
    it from starting."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.query: Any = None
        self._threads: list[threading.Thread] = []
        signal.signal(signal.SIGTERM, self.signalled)

    def signalled(self, signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: stopping the query", signum)
        self.requested.set()
        if self.query is not None:
            self._stop()

    def started(self, query: Any) -> None:
        self.query = query
        if self.requested.is_set():
            self._stop()

    def _stop(self) -> None:
        thread = threading.Thread(target=self.query.stop, name="federator-stop", daemon=True)
        self._threads.append(thread)
        thread.start()

    def wait(self) -> None:
        for thread in self._threads:
            thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="federator_spark", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--task-config", required=True, help="path to the task config JSON, or the JSON itself"
    )
    parser.add_argument("--master", help="Spark master for local runs (spark-submit sets it otherwise)")
    parser.add_argument("--available-now", action="store_true", help="process what is there, then stop")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=logs.FORMAT)
    stopper = Stopper()

    config = load_task_config(args.task_config)
    task = pipeline.plan_task(config)
    translation = translation_plan(config, task.layout)
    builder = SparkSession.builder.appName(f"federator-{task.namespace}-{task.name}")
    builder = spark_settings.configured(builder)
    if args.master:
        builder = builder.master(args.master).config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    _quiet_accumulator_hangups(spark)
    server = companions = None
    try:
        if config.metrics_port:  # the application's, not the task's
            server = metrics.serve(
                config.metrics_port, str(task.layout.status_file), task.namespace, task.name
            )
        if not stopper.requested.is_set():
            query = pipeline.start(spark, task, available_now=args.available_now)
            stopper.started(query)
            companions = Companions.of(task, translation)
            companions.start()
            query.awaitTermination()
    finally:
        stopper.wait()
        if companions is not None:  # the translator once more: its FailoverGroup may be switching
            companions.stop(final=True)
        if server is not None:
            server.shutdown()
        spark.stop()
    return 0


def _quiet_accumulator_hangups(spark: SparkSession) -> None:
    """``SparkContext.stop()`` stops the JVM before PySpark's accumulator server, so the server's handler
    reads the JVM's closed connection and prints an ``EOFError`` traceback on a clean stop; that one
    error is logged at debug level instead (any other is printed as before)."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None:
        return
    print_traceback = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], EOFError):
            logger.debug("the JVM closed its accumulator connection %s", client_address)
        else:
            print_traceback(request, client_address)

    server.handle_error = handle_error
