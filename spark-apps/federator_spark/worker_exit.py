"""A Python worker that the JVM lets go while it waits for its next use ends quietly (issue #41, item 7).

Spark keeps a reused Python worker connected after each use. When its factory has been idle for a minute,
or the session stops, the JVM closes the socket of every worker waiting there (``PythonWorkerFactory``).
PySpark's daemon then starts the worker's next use all the same: the worker reads end-of-file, writes an
error report for a JVM that is gone, and the daemon's final flush fails on the closed socket, which prints
a ``BrokenPipeError`` traceback (``pyspark/daemon.py``, with ``spark.python.daemon.killWorkerOnFlushFailure``
on or off) from every idle worker: a traceback in every app's log that is no error at all.

:class:`QuietWhenClosed` wraps the daemon's ``worker`` function, which its loop looks up afresh before each
use: before a use after the first, it waits for the JVM's first byte as the worker would, and if the JVM
closed the socket instead, it ends the worker with one debug line. Anything else, a real error included,
takes PySpark's own path and keeps its traceback.

A worker of PySpark's own daemon that serves the session once (Spark's lookup of registered data sources)
is not kept at all (:func:`not_kept_after_this_use`): the JVM stops it after its use instead of keeping it a
minute.
"""

from __future__ import annotations

import importlib
import logging
import socket
import sys
from collections.abc import Callable
from typing import IO, Any

logger = logging.getLogger(__name__)

Worker = Callable[[socket.socket, bool], int]
"""``pyspark.daemon.worker``: serves one use of a forked worker on its socket, returns its exit code."""

CLOSED = 1
"""Returned for a worker whose socket the JVM closed: PySpark's daemon ends a worker whose use did not return
0, after draining a socket that is already at its end."""

PYSPARK_DAEMON = "pyspark.daemon"

USED_ONCE_PLANNERS = frozenset({"pyspark.sql.worker.lookup_data_sources"})
"""The planners whose workers the JVM need not keep: Spark's lookup of registered data sources runs once per
session, and its worker would idle a minute after it (42 MB at bench.replication's peak). The others are
kept: a query uses the writer's planner (``write_into_data_source``: Spark asks Python for each batch's
writer) and the commit runner in every batch, and fresh workers for a query's start (``create_data_source``,
``plan_data_source_read``) made each start about a second slower in bench.replication (docs/replication.md,
"Planner workers that leave after their use"), mostly re-reading zip archives, unless their daemon prepared
them (``QUERY_START_PLANNERS``)."""

QUERY_START_PLANNERS = frozenset(
    {"pyspark.sql.worker.create_data_source", "pyspark.sql.worker.plan_data_source_read"}
)
"""The planners a query uses only at its start. Their workers are not kept when their daemon imported the
app's modules before it forks (``worker_daemon.prepare_at_start``): a fresh worker is then a fork
that imports and re-reads nothing (tens of milliseconds), and a kept one idled a minute after every query's
start (167 MB at bench.replication's peak)."""


def closed_by_jvm(sock: socket.socket) -> bool:
    """Whether the JVM closed ``sock`` rather than send a use: blocks, as the worker's first read would,
    until either happens, and leaves what arrived to be read."""
    try:
        return not sock.recv(1, socket.MSG_PEEK)
    except ConnectionResetError:
        return True


class QuietWhenClosed:
    """PySpark's daemon's ``worker``, which ends a reused worker quietly when the JVM let it go."""

    def __init__(self, worker: Worker, *, served: bool = False) -> None:
        self.worker = worker
        # The first use follows the fork at once (the JVM connected to run it), before PySpark's worker
        # has set a forked process's signal handlers: it is not waited for here.
        self.served = served

    def __call__(self, sock: socket.socket, authenticated: bool) -> int:
        if self.served and closed_by_jvm(sock):
            logger.debug("the JVM closed this idle Python worker's socket: it ends")
            return CLOSED
        self.served = True
        return self.worker(sock, authenticated)


def quiet_daemon(daemon: Any) -> None:
    """Make the module ``daemon`` (PySpark's ``pyspark.daemon``, loaded but not yet serving) fork workers
    that end quietly when the JVM lets them go."""
    if not isinstance(daemon.worker, QuietWhenClosed):
        daemon.worker = QuietWhenClosed(daemon.worker)


def forked_by_pyspark_daemon() -> bool:
    """Whether this process is a worker forked by PySpark's own daemon (the data source planners' and the
    sink's commit runner's: their daemon module is not a setting). That daemon runs as the process's
    ``__main__``; the driver and the task workers (forked by ``worker_daemon``) are not such workers."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == PYSPARK_DAEMON


def quiet_this_worker() -> None:
    """In a worker forked by PySpark's own daemon, while it serves a use: end quietly when the JVM lets it
    go. The daemon's loop calls its ``worker`` anew for each use, from ``__main__``."""
    main: Any = sys.modules["__main__"]  # a module whose names its code alone knows
    if not isinstance(main.worker, QuietWhenClosed):
        main.worker = QuietWhenClosed(main.worker, served=True)


def planner_module() -> str:
    """The module a worker forked by PySpark's own daemon serves: Spark starts that daemon as ``python -m
    pyspark.daemon <module>``, one daemon per module, and its workers inherit its arguments."""
    return sys.argv[1] if len(sys.argv) > 1 else ""


class NotKept:
    """PySpark's planners' ``write_int`` (``pyspark.sql.worker.utils``), answering the JVM's end of stream
    with PySpark's own "do not reuse this worker" (``END_OF_DATA_SECTION``): the JVM then stops the worker
    after its use (``PythonPlannerRunner``: only a worker that answers ``END_OF_STREAM`` is released to its
    factory's pool), through its daemon, without a warning. Every other value is written as it is."""

    def __init__(self, write_int: Callable[[int, IO[bytes]], None]) -> None:
        self.write_int = write_int

    def __call__(self, value: int, stream: IO[bytes]) -> None:
        from pyspark.serializers import SpecialLengths

        if value == SpecialLengths.END_OF_STREAM:
            value = SpecialLengths.END_OF_DATA_SECTION
        self.write_int(value, stream)


def not_kept_after_this_use() -> None:
    """In a planner worker, during its use: the JVM does not keep it after this use. The planners' use ends
    in ``worker_run``, which answers the JVM's end of stream with the module's ``write_int``."""
    utils: Any = importlib.import_module("pyspark.sql.worker.utils")  # write_int: imported, not exported

    if not isinstance(utils.write_int, NotKept):
        utils.write_int = NotKept(utils.write_int)


def adapt_forked_planner(module: str) -> None:
    """In a worker just forked by the daemon of the planner ``module``, one that imported the app's modules
    before it forks (so the app's code never first runs in the worker): the worker ends quietly when the JVM
    lets it go, and the JVM does not keep it after its use if a fresh one costs only a fork."""
    quiet_daemon(sys.modules["__main__"])  # PySpark's daemon, whose loop looks its ``worker`` up there
    if module in USED_ONCE_PLANNERS | QUERY_START_PLANNERS:
        not_kept_after_this_use()


def adapt_if_forked_by_pyspark_daemon() -> None:
    """Where the app's code first runs in a worker of PySpark's own daemon (a data source's module, or a
    ``pyspark_*`` module Spark's lookup imports): that worker ends quietly when the JVM lets it go, and
    the JVM does not keep one of the planners used once (``USED_ONCE_PLANNERS``) after this use."""
    if forked_by_pyspark_daemon():
        quiet_this_worker()
        if planner_module() in USED_ONCE_PLANNERS:
            not_kept_after_this_use()
