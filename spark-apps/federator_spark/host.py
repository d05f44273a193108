"""One Spark application for several tasks (local mode runs a mirror's generated tasks this way): one
SparkSession, one streaming query per task, each started by the replication app's own `pipeline.start`.
A JVM costs about a core's worth of background work on a small machine even when idle; a mirror's tasks
share their settings, so one application runs them all (docs/local-mode.md has the figures).

    python -m federator_spark.host --master local[2] --task-config a.json --task-config b.json

Each query logs `task <ns>/<name> started (query …)` like the single-task app; a query that fails logs
`task <ns>/<name> failed: <error>` and the others keep running. SIGTERM stops every query, then Spark.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from pyspark.sql import SparkSession

from federator_contract.applog import failed_marker
from federator_contract.taskconfig import TaskConfig
from federator_spark import logs, metrics, pipeline, spark_settings
from federator_spark.config import load_task_config
from federator_spark.pipeline import TaskPlan

logger = logging.getLogger("federator.host")
START_WAIT_SECONDS = 60.0
TRANSIENT = "Python worker failed to connect back"
RETRIES = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="federator_spark.host", description=__doc__.splitlines()[0])
    parser.add_argument("--task-config", action="append", required=True, help="a task config file")
    parser.add_argument("--master", default="local[2]", help="Spark master")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=logs.FORMAT)

    configs = [load_task_config(path) for path in args.task_config]
    builder = SparkSession.builder.appName("federator-local").master(args.master)
    builder = builder.config("spark.ui.enabled", "false")
    spark = spark_settings.configured(builder).getOrCreate()
    host = Host(spark)
    tasks = [(config, task) for config in configs if (task := host.plan(config)) is not None]
    servers = [
        metrics.serve(config.metrics_port, str(task.layout.status_file), task.namespace, task.name)
        for config, task in tasks
        if config.metrics_port
    ]
    signal.signal(signal.SIGTERM, host.stop)
    try:
        for _, task in tasks:
            if not host.stopping.is_set():
                host.start(task)
        host.supervise()
    finally:
        for thread in host.stoppers:  # Spark stops once every query has (nothing calls a stopped context)
            thread.join()
        for server in servers:
            server.shutdown()
        spark.stop()
    return 1 if host.failed and not host.stopping.is_set() else 0


class Host:
    """The queries of one session. They are started one after the other, each once the previous one has
    initialised its source: Spark waits a fixed 10 s for a new Python worker to connect back, which
    several source runners starting at once on a busy machine exceed. That failure is transient, so such
    a query is started again (`RETRIES` times); any other failure is the task's."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.running: list[tuple[TaskPlan, Any]] = []
        self.retries: dict[str, int] = {}
        self.failed = False
        self.stopping = threading.Event()
        self.stoppers: list[threading.Thread] = []

    def plan(self, config: TaskConfig) -> TaskPlan | None:
        """The task's plan, or None for a task the app cannot run."""
        try:
            return pipeline.plan_task(config)
        except Exception as err:  # a task the app cannot run must not keep the others from running
            self._fail(config.namespace, config.name, err)
            return None

    def start(self, task: TaskPlan) -> None:
        try:
            query = pipeline.start(self.spark, task)
        except Exception as err:  # likewise
            self._fail(task.namespace, task.name, err)
            return
        self.running.append((task, query))
        if self.stopping.is_set():  # the signal came while it started
            self._stop(query)
            return
        deadline = time.monotonic() + START_WAIT_SECONDS
        while query.isActive and time.monotonic() < deadline and not self.stopping.is_set():
            if query.lastProgress is not None or not str(query.status["message"]).startswith("Initializing"):
                return
            time.sleep(0.2)

    def supervise(self) -> None:
        """Until every query has ended (stopped, or failed for good)."""
        while self.running:
            with contextlib.suppress(Exception):  # the query that ended is inspected below
                self.spark.streams.awaitAnyTermination()
            for task, query in list(self.running):
                if query.isActive:
                    continue
                self.running.remove((task, query))
                error = query.exception()
                if error is None or self.stopping.is_set():
                    continue
                if TRANSIENT in str(error) and self.retries.get(task.key, 0) < RETRIES:
                    self.retries[task.key] = self.retries.get(task.key, 0) + 1
                    logger.warning("task %s: %s; starting its query again", task.key, TRANSIENT)
                    self.start(task)
                else:
                    self._fail(task.namespace, task.name, error)
            self.spark.streams.resetTerminated()

    def stop(self, signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: stopping %d queries", signum, len(self.running))
        self.stopping.set()
        for _, query in list(self.running):
            # The main thread may be inside a py4j call; stopping from another thread lets it return.
            self._stop(query)

    def _stop(self, query: Any) -> None:
        thread = threading.Thread(target=query.stop, name="federator-stop", daemon=True)
        self.stoppers.append(thread)
        thread.start()

    def _fail(self, namespace: str, name: str, err: BaseException) -> None:
        logger.error("%s%s", failed_marker(namespace, name), summary(err))
        self.failed = True


def summary(err: BaseException) -> str:
    """An error in one line: the last `SomethingError: …` line of its text (the Python exception a
    Spark error wraps), else its first line."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(": ", 1)[0]
        if head.rsplit(".", 1)[-1].endswith(("Error", "Exception")) and " " not in head:
            return line
    return lines[0] if lines else type(err).__name__


if __name__ == "__main__":
    sys.exit(main())
