"""One Spark application for several tasks (local mode runs a mirror's generated tasks this way): one
SparkSession, one streaming query per task, each started by the replication app's own `pipeline.start`.
A JVM costs about a core's worth of background work on a small machine even when idle; tasks that share
their settings share one application (docs/local-mode.md has the figures).

    python -m federator_spark.host --master local[2] --task-config a.json --task-dir /etc/federator/tasks

The driver reconciles its queries with the configs it is given, every second (``federator_spark.fleet``
decides, this module acts): a config that appears in a ``--task-dir`` starts its task, one that changes
restarts only that task's query, one that goes stops only that query; the JVM goes on. A query that
fails logs `task <ns>/<name> failed: <error>` and starts again after a backoff of its own (2 s doubling
up to 5 min); the others keep running. SIGTERM stops every query, then Spark.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pyspark.sql import SparkSession

from federator_contract.applog import failed_marker
from federator_contract.taskconfig import TaskConfig
from federator_spark import fleet, logs, metrics, pipeline, spark_settings
from federator_spark.fleet import ConfigReader, Member, Report, Start, Stop
from federator_spark.pipeline import TaskPlan

logger = logging.getLogger("federator.host")
START_WAIT_SECONDS = 60.0
PASS_SECONDS = 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="federator_spark.host", description=__doc__.splitlines()[0])
    parser.add_argument("--task-config", action="append", default=[], help="a task config file (fixed)")
    parser.add_argument(
        "--task-dir", action="append", default=[], help="a directory of task configs (watched)"
    )
    parser.add_argument("--master", default="local[2]", help="Spark master")
    args = parser.parse_args(argv)
    if not args.task_config and not args.task_dir:
        parser.error("give at least one --task-config or --task-dir")
    logging.basicConfig(level=logging.INFO, format=logs.FORMAT)

    reader = ConfigReader([Path(d) for d in args.task_dir], [Path(f) for f in args.task_config])
    builder = SparkSession.builder.appName("federator-local").master(args.master)
    builder = builder.config("spark.ui.enabled", "false")
    spark = spark_settings.configured(builder).getOrCreate()
    host = Host(spark, reader)
    signal.signal(signal.SIGTERM, host.stop)
    try:
        host.run()
    finally:
        host.close()
        spark.stop()
    return 0


@dataclass
class Task:
    """A member's moving parts: its query (None while it waits to start again) and metrics endpoint."""

    config: TaskConfig
    query: Any = None
    server: Any = None
    failures: int = 0
    retry_at: float = 0.0


class Host:
    """The queries of one session, reconciled with ``reader``'s configs. A query is started once the one
    before has initialised its source: Spark waits a fixed 10 s for a new Python worker to connect back,
    which several source runners starting at once on a busy machine exceed (such a failure is retried
    like any other, after the task's backoff). The passes do not wait for it: a task slow to start
    delays only the starts behind it."""

    def __init__(
        self,
        spark: SparkSession,
        reader: ConfigReader | None = None,
        *,
        backoff_seconds: float = fleet.BACKOFF_SECONDS,
        backoff_cap_seconds: float = fleet.BACKOFF_CAP_SECONDS,
    ) -> None:
        self.spark = spark
        self.reader = reader or ConfigReader()
        self.backoff = (backoff_seconds, backoff_cap_seconds)
        self.tasks: dict[str, Task] = {}
        self.reported: dict[str, str] = {}
        self.failed = False
        self.stopping = threading.Event()
        self.stoppers: list[threading.Thread] = []
        self.starting: tuple[Any, float] | None = None

    def run(self, pass_seconds: float = PASS_SECONDS) -> None:
        """Reconcile every ``pass_seconds`` until stopped."""
        activate(self.spark)
        while not self.stopping.is_set():
            self.reconcile()
            self.stopping.wait(pass_seconds)

    def reconcile(self) -> None:
        """One pass: see which queries ended, read the configs, act on the difference."""
        self._observe()
        members = {
            key: Member(task.config, task.query is not None, task.retry_at)
            for key, task in self.tasks.items()
        }
        actions = fleet.decide(self.reader.read(), members, time.monotonic())
        self._report([action for action in actions if isinstance(action, Report)])
        for action in actions:
            if self.stopping.is_set():
                return
            if isinstance(action, Stop):
                self._remove(action.key, action.why)
            elif isinstance(action, Start):
                self._start(action.key, action.config)

    def plan(self, config: TaskConfig) -> TaskPlan | None:
        """The task's plan, or None for a task the app cannot run (reported)."""
        try:
            return pipeline.plan_task(config)
        except Exception as err:  # a task the app cannot run must not keep the others from running
            self._fail(config.namespace, config.name, err)
            return None

    def stop(self, signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: stopping %d queries", signum, len(self.tasks))
        self.stopping.set()
        for task in list(self.tasks.values()):
            if task.query is not None:
                # The main thread may be inside a py4j call; stopping from another thread lets it return.
                self._stop_later(task.query)

    def close(self) -> None:
        """Once stopped: wait for the queries to end (nothing may call a stopped context), end the
        metrics endpoints."""
        for task in self.tasks.values():
            if task.query is not None and not self.stopping.is_set():
                self._stop_later(task.query)
        for thread in self.stoppers:
            thread.join()
        for task in self.tasks.values():
            end_metrics(task.server)

    def _observe(self) -> None:
        for key, task in self.tasks.items():
            if task.query is None:
                continue
            if not task.query.isActive:
                error = task.query.exception()
                task.query = None
                self._retry_later(key, task, error or RuntimeError("its query stopped"))
            elif task.failures and task.query.lastProgress is not None:
                task.failures = 0  # a batch went through: the next failure starts the backoff afresh

    def _start(self, key: str, config: TaskConfig) -> None:
        if self._initialising():
            return  # the next pass decides again; meanwhile the loop goes on observing and stopping
        task = self.tasks.setdefault(key, Task(config))
        plan = self.plan(config)
        if plan is None:
            self._retry_later(key, task, None)
            return
        try:
            if task.server is None and config.metrics_port:
                status_file = str(plan.layout.status_file)
                task.server = metrics.serve(config.metrics_port, status_file, config.namespace, config.name)
            task.query = pipeline.start(self.spark, plan)
        except Exception as err:  # likewise
            self._fail(config.namespace, config.name, err)
            self._retry_later(key, task, None)
            return
        if self.stopping.is_set():  # the signal came while it started
            self._stop_later(task.query)
        self.starting = (task.query, time.monotonic() + START_WAIT_SECONDS)

    def _initialising(self) -> bool:
        """Whether the query started last still initialises its source (for at most
        ``START_WAIT_SECONDS``): the next one starts after it."""
        if self.starting is None:
            return False
        query, deadline = self.starting
        waiting = query.isActive and time.monotonic() < deadline and query.lastProgress is None
        if waiting and str(query.status["message"]).startswith("Initializing"):
            return True
        self.starting = None
        return False

    def _remove(self, key: str, why: str) -> None:
        task = self.tasks[key]
        if task.query is not None:
            task.query.stop()  # before a restart: one checkpoint, one query
        end_metrics(task.server)
        del self.tasks[key]
        logger.info("task %s stopped: %s", key, why)

    def _retry_later(self, key: str, task: Task, error: BaseException | None) -> None:
        """``error``: the query's, reported here (None: reported already)."""
        if error is not None:
            self._fail(task.config.namespace, task.config.name, error)
        task.failures += 1
        delay = fleet.backoff(task.failures, *self.backoff)
        task.retry_at = time.monotonic() + delay
        logger.info("task %s: starting it again in %.0f s (failure %d in a row)", key, delay, task.failures)

    def _report(self, reports: list[Report]) -> None:
        """Each broken config file once per distinct error, against its task when it held one."""
        current = {report.source: report for report in reports}
        for source, report in current.items():
            if self.reported.get(source) == report.error:
                continue
            if report.key is not None:
                namespace, name = report.key.split("/", 1)
                logger.error("%s%s: %s", failed_marker(namespace, name), source, report.error)
                self.failed = True
            else:
                logger.error("task config %s: %s", source, report.error)
        self.reported = {source: report.error for source, report in current.items()}

    def _stop_later(self, query: Any) -> None:
        thread = threading.Thread(target=query.stop, name="federator-stop", daemon=True)
        self.stoppers.append(thread)
        thread.start()

    def _fail(self, namespace: str, name: str, err: BaseException) -> None:
        logger.error("%s%s", failed_marker(namespace, name), summary(err))
        self.failed = True


def end_metrics(server: Any) -> None:
    """Stop serving and free the port (a task started again, or another, may bind it)."""
    if server is not None:
        server.shutdown()
        server.server_close()


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the calling thread's active session: Spark looks a Python data source up in the
    active session, a JVM thread-local that a thread other than the session's builder does not have
    (PySpark has no public setter)."""
    jvm = spark._jvm
    assert jvm is not None
    SparkSession._get_j_spark_session_class(jvm).setActiveSession(spark._jsparkSession)


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
