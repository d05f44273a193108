"""One Spark application for several tasks (a shared ReplicationApplication in a cluster; local mode runs
a mirror's generated tasks this way): one SparkSession, one streaming query per task, each started by the
replication app's own `pipeline.start`. A JVM costs about a core's worth of background work on a small
machine even when idle; tasks that share their settings share one application (docs/local-mode.md has
the figures).

    python -m federator_spark.host --master local[2] --task-config a.json --task-dir /etc/federator/tasks
    python -m federator_spark.host --task-configmaps federator.io/application=orders --metrics-port 9464

The driver reconciles its queries with the configs it is given, every second and at once when a look at
them (every 0.1 s) finds one changed (``federator_spark.fleet`` decides, this module acts): a config that
appears (a file in a ``--task-dir``, a ConfigMap matching ``--task-configmaps``, watched through the API
server) starts its task, one that changes restarts only that task's query, one that goes stops only that
query; the JVM goes on. A query that fails logs `task <ns>/<name> failed: <error>` and starts again after a
backoff of its own (2 s doubling up to 5 min); the others keep running. Each query has the companions a
single-task driver gives it (``federator_spark.companions``: the lag monitor of an Event Hubs source, the
checkpoint translator of a FailoverGroup's follower), started with it (once those of its previous query
have stopped: the query does not wait for them) and stopped with it without holding up the others' pass.
A follower's move to another member is logged phase by phase once its first trigger there is done
(`task <ns>/<name> moved to member <m>: config seen +… → old query stopped +… → new query started +… →
first batch done +…`). When the application schedules FAIR, its default, a task's batches run in the
scheduler pool of the members keeping up, ahead of any waiting in the pool of those catching up a backlog
(``federator_spark.pools``); a member without limits of its own reads bounded batches, at most one every
500 ms, the members' spread over those 500 ms (``federator_spark.scheduling``). One status endpoint per
metrics port (``federator_spark.status_server``) serves the tasks of that port and lists the task configs
the driver cannot run. SIGTERM stops every query, then Spark.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

from pyspark.sql import SparkSession

from federator_contract import driverstatus as ds
from federator_contract.applog import failed_marker
from federator_contract.taskconfig import TaskConfig
from federator_spark import fleet, logs, pipeline, pools, scheduling, spark_settings
from federator_spark.companions import Companions, Retiring
from federator_spark.fleet import ConfigReader, Found, Member, Move, Reader, Report, Start, Stop
from federator_spark.kube_client import ApiAccess, NotInCluster
from federator_spark.pipeline import TaskPlan
from federator_spark.status_server import ApplicationServer, InvalidConfig, TaskEntry
from federator_spark.translation.planning import translation_plan

logger = logging.getLogger("federator.host")
START_WAIT_SECONDS = 60.0


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format=logs.FORMAT)
    try:
        reader, closing = _reader(args)
    except NotInCluster as error:
        print(f"federator_spark.host: {error}", file=sys.stderr)
        return 2
    builder = SparkSession.builder.appName("federator-shared")
    if args.master:  # else spark-submit's (a cluster's application)
        builder = builder.master(args.master).config("spark.ui.enabled", "false")
    with tempfile.TemporaryDirectory(prefix="federator-") as directory:  # read as the context starts
        for key, value in pools.scheduler_settings(Path(directory)).items():
            builder = builder.config(key, value)
        spark = spark_settings.configured(builder).getOrCreate()
    host = Host(spark, reader, metrics_port=args.metrics_port)
    signal.signal(signal.SIGTERM, host.stop)
    try:
        host.run()
    finally:
        host.close()
        if closing is not None:
            closing()
        spark.stop()
    return 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="federator_spark.host", description=__doc__.splitlines()[0])
    parser.add_argument("--task-config", action="append", default=[], help="a task config file (fixed)")
    parser.add_argument(
        "--task-dir", action="append", default=[], help="a directory of task configs (watched)"
    )
    parser.add_argument(
        "--task-configmaps",
        metavar="SELECTOR",
        help="a label selector: the task ConfigMaps (key task.json) to run, watched through the API server",
    )
    parser.add_argument("--namespace", help="the ConfigMaps' namespace (default: the pod's)")
    parser.add_argument("--metrics-port", type=int, help="serve every task's metrics and status here")
    parser.add_argument("--master", help="Spark master for local runs (spark-submit sets it otherwise)")
    args = parser.parse_args(argv)
    if args.task_configmaps and (args.task_config or args.task_dir):
        parser.error(
            "--task-configmaps reads the task configs from the API server: no --task-config/--task-dir"
        )
    if not (args.task_config or args.task_dir or args.task_configmaps):
        parser.error("give at least one --task-config or --task-dir, or --task-configmaps")
    if args.namespace and not args.task_configmaps:
        parser.error("--namespace is the namespace of --task-configmaps")
    return args


def _reader(args: argparse.Namespace) -> tuple[Reader, Any]:
    """The reader the arguments name, and what stops it (None: nothing to stop)."""
    if not args.task_configmaps:
        return ConfigReader([Path(d) for d in args.task_dir], [Path(f) for f in args.task_config]), None
    from federator_spark.config_watch import ConfigMapReader, ConfigMapWatch

    access = ApiAccess.in_cluster()
    watch = ConfigMapWatch(access, args.namespace or access.namespace, args.task_configmaps)
    watch.start()
    return ConfigMapReader(watch), watch.stop


@dataclass
class Task:
    """A member's moving parts: its query (None while it waits to start again) and the driver threads
    that go with it (its lag monitor, its translator; started once its previous query's have stopped),
    its status file once planned, and its last error (None once it runs again)."""

    config: TaskConfig
    query: Any = None
    companions: Companions | None = None
    companions_started: bool = False
    status_file: str | None = None
    error: str | None = None
    failures: int = 0
    retry_at: float = 0.0
    phase: float = 0.0
    """Where in each trigger interval its query's batches begin (``scheduling.spread``)."""
    batch_limit: int | None = None
    """The most events its query reads a batch (None: no limit)."""
    catching_up: bool = False
    """Whether its batches run in the catching-up pool (``federator_spark.pools``)."""


class Host:
    """The queries of one session, reconciled with ``reader``'s configs. A query is started once the one
    before has initialised its source: Spark waits a fixed 10 s for a new Python worker to connect back,
    which several source runners starting at once on a busy machine exceed (such a failure is retried
    like any other, after the task's backoff). The passes do not wait for it: a task slow to start
    delays only the starts behind it."""

    def __init__(
        self,
        spark: SparkSession,
        reader: Reader | None = None,
        *,
        backoff_seconds: float = fleet.BACKOFF_SECONDS,
        backoff_cap_seconds: float = fleet.BACKOFF_CAP_SECONDS,
        metrics_port: int | None = None,
        pooled: bool | None = None,
    ) -> None:
        """``metrics_port``: an endpoint for every task, from the start (else one per task config's
        port); ``pooled``: its queries in the scheduler pools of ``federator_spark.pools`` (default: when the
        session schedules FAIR)."""
        self.spark = spark
        self.reader: Reader = reader or ConfigReader()
        self.backoff = (backoff_seconds, backoff_cap_seconds)
        self.tasks: dict[str, Task] = {}
        self.reported: dict[str, str] = {}
        self.invalid: list[InvalidConfig] = []
        if pooled is None:
            pooled = pools.scheduler_mode(spark.sparkContext.getConf()) == "FAIR"
        self.pooled = pooled
        self.endpoints = Endpoints(metrics_port)
        self.failed = False
        self.stopping = threading.Event()
        self.stoppers: list[threading.Thread] = []
        self.retiring = Retiring()
        self.starting: tuple[Any, float] | None = None
        self.moves: dict[str, Move] = {}
        """Following tasks whose query moves to another member, until its first batch there."""

    def run(self, pass_seconds: float = fleet.PASS_SECONDS, look_seconds: float = fleet.LOOK_SECONDS) -> None:
        """Reconcile every ``pass_seconds``, and at once when a look (every ``look_seconds``) finds the
        configs changed, until stopped."""
        activate(self.spark)
        passes = fleet.Passes(pass_seconds, look_seconds)
        while not self.stopping.is_set():
            found = self.reader.read()
            if passes.due(found, time.monotonic()):
                self.reconcile(found)
            self.stopping.wait(passes.look_seconds)

    def reconcile(self, found: list[Found] | None = None) -> None:
        """One pass: see which queries ended, read the configs (unless given ``found``), act on the
        difference."""
        self.retiring.pending()  # forgets the companions that have stopped meanwhile
        self._observe()
        members = {
            key: Member(task.config, task.query is not None, task.retry_at)
            for key, task in self.tasks.items()
        }
        actions = fleet.decide(self.reader.read() if found is None else found, members, time.monotonic())
        self._report([action for action in actions if isinstance(action, Report)])
        starts = {action.key: action.config for action in actions if isinstance(action, Start)}
        for action in actions:
            if self.stopping.is_set():
                return
            if isinstance(action, Stop):
                self._remove(action.key, action.why, starts.get(action.key))
            elif isinstance(action, Start):
                self._start(action.key, action.config)
        for key, task in self.tasks.items():
            self._start_companions(key, task)
        self._publish(self.tasks)

    def plan(self, task: Task) -> TaskPlan | None:
        """The task's plan, or None for a task the app cannot run (reported)."""
        try:
            return pipeline.plan_task(task.config)
        except Exception as err:  # a task the app cannot run must not keep the others from running
            self._fail(task, err)
            return None

    def stop(self, signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: stopping %d queries", signum, len(self.tasks))
        self.stopping.set()
        for task in list(self.tasks.values()):
            if task.query is not None:
                # The main thread may be inside a py4j call; stopping from another thread lets it return.
                self._stop_later(task.query)

    def close(self) -> None:
        """Once stopped: wait for the queries to end (nothing may call a stopped context), then for
        their companions (the translators once more, after the last batches), end the metrics
        endpoints."""
        for task in self.tasks.values():
            if task.query is not None and not self.stopping.is_set():
                self._stop_later(task.query)
        for thread in self.stoppers:
            thread.join()
        for key, task in self.tasks.items():
            self._retire(key, task, final=True)  # a FailoverGroup may be switching
        self.retiring.join()
        self.endpoints.close()

    def _observe(self) -> None:
        for key, task in self.tasks.items():
            if task.query is None:
                continue
            if not task.query.isActive:
                error = task.query.exception()
                task.query = None
                self._retire(key, task, final=False)
                self._retry_later(key, task, error or RuntimeError("its query stopped"))
                continue
            if key in self.moves:
                first = task.query.recentProgress[:1]  # the first trigger's, however many came since
                if first:
                    self._moved(key, first[0])
            if task.failures and task.query.lastProgress is not None:
                task.failures = 0  # a batch went through: the next failure starts the backoff afresh
            if self.pooled:
                task.catching_up = pools.keep_pool(key, task.query, task.batch_limit, task.catching_up)

    def _moved(self, key: str, progress: Any) -> None:
        """Log the phases of the task's move once its query on the new member made its first trigger."""
        move = self.moves.get(key)
        if move is None or move.started is None:
            return
        del self.moves[key]
        began = datetime.fromisoformat(str(progress["timestamp"])).timestamp()
        durations = dict(progress["durationMs"])
        done = began + durations.get("triggerExecution", 0) / 1000
        batch = "first batch done" if "addBatch" in durations else "first trigger found nothing new"
        told = move.told(done, progress["numInputRows"], batch)
        logger.info("task %s %s; its first trigger took %s ms", key, told, durations)

    def _start(self, key: str, config: TaskConfig) -> None:
        if self._initialising():
            return  # the next pass decides again; meanwhile the loop goes on observing and stopping
        task = self.tasks.setdefault(key, Task(config))
        plan = self.plan(task)
        if plan is None:
            self._retry_later(key, task, None)
            return
        task.status_file = str(plan.layout.status_file)
        try:
            task.companions = Companions.of(plan, translation_plan(task.config, plan.layout))
            task.phase = scheduling.spread([t.phase for t in self.tasks.values() if t.query is not None])
            task.query = self._start_query(task, plan)
        except Exception as err:  # likewise
            self._fail(task, err)
            self._retire(key, task, final=False)
            self._retry_later(key, task, None)
            return
        if key in self.moves:
            self.moves[key].started = time.time()
        self._start_companions(key, task)
        task.error = None
        if self.stopping.is_set():  # the signal came while it started
            self._stop_later(task.query)
        self.starting = (task.query, time.monotonic() + START_WAIT_SECONDS)

    def _start_companions(self, key: str, task: Task) -> None:
        """Once the companions of the task's previous query have stopped (one translator per task's
        state). The query does not wait for them: the old lag monitor's stop may wait for a measurement
        against a member that went down, and a follower's move would wait with it."""
        if task.companions is None or task.companions_started or self.retiring.busy(key):
            return
        task.companions.start()
        task.companions_started = True

    def _start_query(self, task: Task, plan: TaskPlan) -> Any:
        """Start the query in the members' scheduler pool: Spark copies the calling thread's local
        properties into the query's thread when ``start()`` creates it, and every job of the query
        carries them; they are cleared again for whatever this thread does next. Bounded, paced and
        phased as ``federator_spark.scheduling`` says."""
        context, conf = self.spark.sparkContext, self.spark.conf
        events = scheduling.member_events_per_trigger(conf.get(scheduling.MEMBER_EVENTS_SETTING, None))
        trigger_ms = scheduling.member_trigger_ms(conf.get(scheduling.MEMBER_TRIGGER_SETTING, None))
        if self.pooled:
            context.setLocalProperty(pools.POOL_PROPERTY, pools.MEMBERS_POOL)
        try:
            paced = scheduling.paced(scheduling.bounded(plan, events), trigger_ms)
            task.batch_limit, task.catching_up = pools.batch_limit(paced), False
            return pipeline.start(self.spark, scheduling.phased(paced, task.phase))
        finally:
            if self.pooled:
                context.setLocalProperty(pools.POOL_PROPERTY, None)  # type: ignore[arg-type]  # None unsets it

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

    def _remove(self, key: str, why: str, restart: TaskConfig | None = None) -> None:
        """``restart``: the config the task starts again with (a move to another member is timed)."""
        task = self.tasks[key]
        move = fleet.moving(task.config, restart, time.time()) if restart is not None else None
        if move is not None:
            self.moves[key] = move
        else:
            self.moves.pop(key, None)
        if task.query is not None:
            task.query.stop()  # before a restart: one checkpoint, one query
        if move is not None:
            move.stopped = time.time()
        self._retire(key, task, final=True)  # without waiting: the other tasks' pass goes on
        self._publish({k: t for k, t in self.tasks.items() if k != key})  # its endpoint goes first
        del self.tasks[key]
        logger.info("task %s stopped: %s", key, why)

    def _retry_later(self, key: str, task: Task, error: BaseException | None) -> None:
        """``error``: the query's, reported here (None: reported already)."""
        if error is not None:
            self._fail(task, error)
        task.failures += 1
        delay = fleet.backoff(task.failures, *self.backoff)
        task.retry_at = time.monotonic() + delay
        logger.info("task %s: starting it again in %.0f s (failure %d in a row)", key, delay, task.failures)

    def _report(self, reports: list[Report]) -> None:
        """Each broken config once per distinct error in the log, against its task when it held one;
        all of them in the status listing while they are broken."""
        current = {report.source: report for report in reports}
        self.invalid = [
            InvalidConfig(r.source, ds.INVALID_TASK_CONFIG, f"{r.source}: {r.error}", r.key)
            for r in current.values()
        ]
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

    def _retire(self, key: str, task: Task, *, final: bool) -> None:
        """Stop the task's companions, if it has any, in a thread of their own."""
        companions, task.companions = task.companions, None
        started, task.companions_started = task.companions_started, False
        if companions is not None:  # never started: nothing to translate once more
            self.retiring.retire(key, companions, final=final and started)

    def _fail(self, task: Task, err: BaseException) -> None:
        task.error = summary(err)
        logger.error("%s%s", failed_marker(task.config.namespace, task.config.name), task.error)
        self.failed = True

    def _publish(self, tasks: dict[str, Task]) -> None:
        """What the endpoints serve: ``tasks``, and the configs the driver cannot run."""
        self.endpoints.publish(tasks, {key: entry(task) for key, task in tasks.items()}, self.invalid)


def entry(task: Task) -> TaskEntry:
    """The task as the status listing shows it: running, waiting to start, or failed (with why)."""
    config = task.config
    if task.query is not None:
        state, reason, message = ds.TASK_RUNNING, ds.TASK_RUNNING, None
    elif task.error is not None:
        state, reason, message = ds.TASK_FAILED, ds.QUERY_FAILED, task.error
    else:
        state, reason, message = ds.TASK_STARTING, ds.TASK_STARTING, None
    return TaskEntry(config.namespace, config.name, state, reason, message, task.status_file)


class Endpoints:
    """The status endpoints: one per distinct metrics port among the tasks (local mode gives each task a
    port of its own; in a cluster they all have the application's), serving the tasks of that port, plus
    ``fixed`` serving every task from the start. An endpoint whose last task went is closed, freeing its
    port; a port that cannot be bound is logged once and tried again each pass."""

    def __init__(self, fixed: int | None = None) -> None:
        self.fixed = fixed
        self.servers: dict[int, ApplicationServer] = {}
        self.refused: set[int] = set()

    def publish(
        self, tasks: dict[str, Task], entries: dict[str, TaskEntry], invalid: list[InvalidConfig]
    ) -> None:
        wanted = {task.config.metrics_port for task in tasks.values() if task.config.metrics_port}
        if self.fixed is not None:
            wanted.add(self.fixed)
        for port in set(self.servers) - wanted:
            self.servers.pop(port).close()
        for port in sorted(wanted - set(self.servers)):
            self._open(port)
        for port, server in self.servers.items():
            mine = {k: e for k, e in entries.items() if port in (self.fixed, tasks[k].config.metrics_port)}
            server.publish(mine, invalid)

    def _open(self, port: int) -> None:
        try:
            self.servers[port] = ApplicationServer(port)
        except OSError as err:
            if port not in self.refused:
                logger.error("cannot serve metrics on port %d: %s", port, err)
            self.refused.add(port)
        else:
            self.refused.discard(port)

    def close(self) -> None:
        for server in self.servers.values():
            server.close()
        self.servers.clear()


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
