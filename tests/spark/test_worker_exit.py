"""A Python worker waiting for its next use ends quietly when the JVM closes its socket, and serves the use
otherwise (``federator_spark/worker_exit.py``), on real socket pairs; in PySpark's own daemon too."""

from __future__ import annotations

import socket
import subprocess
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from federator_spark import worker_exit
from federator_spark.worker_exit import CLOSED, QuietWhenClosed


class Worker:
    """PySpark's ``worker`` as the daemon calls it: records each use and what it read first."""

    def __init__(self, fails: Exception | None = None) -> None:
        self.uses: list[bytes] = []
        self.fails = fails

    def __call__(self, sock: socket.socket, authenticated: bool) -> int:
        self.uses.append(sock.recv(64))
        if self.fails is not None:
            raise self.fails
        return 0


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """The worker's end of its socket and the JVM's."""
    ours, jvm = socket.socketpair()
    yield ours, jvm
    ours.close()
    jvm.close()


def test_a_reused_worker_whose_socket_the_jvm_closed_ends_without_serving(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, jvm = pair
    worker = Worker()
    jvm.close()

    assert QuietWhenClosed(worker, served=True)(ours, True) == CLOSED
    assert worker.uses == []


def test_a_reused_worker_serves_the_next_use_with_all_the_jvm_sent(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, jvm = pair
    worker = Worker()
    quiet = QuietWhenClosed(worker)
    jvm.sendall(b"first")
    assert quiet(ours, True) == 0
    jvm.sendall(b"second")

    assert quiet(ours, True) == 0
    assert worker.uses == [b"first", b"second"]  # the wait for the second use consumed nothing


def test_the_first_use_is_served_at_once(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, jvm = pair
    worker = Worker()
    jvm.close()  # even so: the worker itself meets the end of its socket

    assert QuietWhenClosed(worker)(ours, False) == 0
    assert worker.uses == [b""]


def test_an_error_in_a_use_is_the_worker_s_own(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, jvm = pair
    jvm.sendall(b"use")

    with pytest.raises(BrokenPipeError):
        QuietWhenClosed(Worker(fails=BrokenPipeError(32, "Broken pipe")), served=True)(ours, True)


def test_the_task_workers_daemon_forks_quiet_workers_once() -> None:
    daemon: Any = types.ModuleType("pyspark.daemon")
    daemon.worker = Worker()
    worker_exit.quiet_daemon(daemon)
    worker_exit.quiet_daemon(daemon)

    assert isinstance(daemon.worker, QuietWhenClosed)
    assert isinstance(daemon.worker.worker, Worker)
    assert daemon.worker.served is False


# A process as ``python -m pyspark.daemon`` makes it (Spark starts the planners' daemon so): ``__main__``
# holds the daemon's code under its module's spec. The app's code then runs inside a use, as a data
# source's does.
IN_PYSPARK_DAEMON = """
import importlib.util, sys
from pyspark import daemon
main = sys.modules["__main__"]
main.__spec__ = importlib.util.find_spec("pyspark.daemon")
main.worker = daemon.worker
from federator_spark import worker_exit
assert worker_exit.forked_by_pyspark_daemon()
worker_exit.quiet_this_worker()
print(type(main.worker).__name__, main.worker.served, main.worker.worker is daemon.worker)
"""


def test_a_worker_forked_by_pyspark_s_own_daemon_ends_quietly_after_the_app_s_code_ran_in_it() -> None:
    run = subprocess.run(
        [sys.executable, "-c", IN_PYSPARK_DAEMON], capture_output=True, text=True, timeout=120
    )

    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["QuietWhenClosed", "True", "True"]


AS_MAIN = """
import importlib.util, sys
sys.modules["__main__"].__spec__ = importlib.util.find_spec(sys.argv[1])
from federator_spark import worker_exit
print(worker_exit.forked_by_pyspark_daemon())
"""


@pytest.mark.parametrize(
    ("main", "forked_by_pyspark"),
    [("pyspark.daemon", True), ("federator_spark.worker_daemon", False), ("federator_spark.app", False)],
)
def test_a_worker_of_pyspark_s_own_daemon_is_told_apart_by_its_main_module(
    main: str, forked_by_pyspark: bool
) -> None:
    run = subprocess.run([sys.executable, "-c", AS_MAIN, main], capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == str(forked_by_pyspark)


# A worker of the planner daemon for ``sys.argv[1]`` in which the app's code ran: what its use's final
# ``write_int`` (``pyspark.sql.worker.utils``, the answer to the JVM's end of stream) writes for the end of
# stream and for another value.
IN_PLANNER = """
import importlib.util, io, sys
from pyspark import daemon
from pyspark.serializers import SpecialLengths, read_int
main = sys.modules["__main__"]
main.__spec__ = importlib.util.find_spec("pyspark.daemon")
main.worker = daemon.worker
from federator_spark import worker_exit
worker_exit.adapt_if_forked_by_pyspark_daemon()
worker_exit.adapt_if_forked_by_pyspark_daemon()  # a second data source module's import changes nothing
from pyspark.sql.worker import utils
written = io.BytesIO()
utils.write_int(SpecialLengths.END_OF_STREAM, written)
utils.write_int(7, written)
written.seek(0)
print(read_int(written), read_int(written))
"""


@pytest.mark.parametrize(
    ("planner", "kept"),
    [
        ("pyspark.sql.worker.lookup_data_sources", False),
        ("pyspark.sql.worker.create_data_source", True),
        ("pyspark.sql.worker.plan_data_source_read", True),
        ("pyspark.sql.worker.write_into_data_source", True),
        ("pyspark.sql.worker.python_streaming_sink_runner", True),
    ],
)
def test_only_the_session_s_lookup_asks_the_jvm_not_to_keep_its_worker(planner: str, kept: bool) -> None:
    from pyspark.serializers import SpecialLengths

    run = subprocess.run(
        [sys.executable, "-c", IN_PLANNER, planner], capture_output=True, text=True, timeout=120
    )

    assert run.returncode == 0, run.stderr[-3000:]
    answer = SpecialLengths.END_OF_STREAM if kept else SpecialLengths.END_OF_DATA_SECTION
    assert run.stdout.split() == [str(answer), "7"]
