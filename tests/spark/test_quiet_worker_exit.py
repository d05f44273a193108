"""A normal run of the app and its stop print no Python traceback from the app's Python workers: the workers
Spark keeps for reuse end quietly when the JVM closes their sockets, after a minute without use or when the
session stops (``federator_spark/worker_exit.py``). A real error in a worker still reaches the driver with
its traceback.

The worker Spark forks once per session to look up statically registered data sources
(``pyspark.sql.worker.lookup_data_sources``) runs none of the app's code but imports ``pyspark_federator``,
which tells the JVM not to keep it: it ends after its one use instead of idling into the same traceback."""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import eh_endpoint, read_all, send, start_app, task_config

from support.polling import eventually

pytestmark = [pytest.mark.jvm]

# PySpark's worker factory closes the sockets of its idle workers once it has not been used for a minute,
# checked every 10 s (``PythonWorkerFactory``, not a setting).
FACTORY_IDLE_TIMEOUT_S = 60 + 10


@pytest.fixture
def short_tmpdir() -> Iterator[Path]:
    """A temporary directory whose path is short enough for the Unix domain sockets the app's Python workers
    use (``spark_settings.python_sockets``): pytest's own are too long, and over TCP the failing flush of a
    worker let go does not fail (the first write to a closed TCP socket succeeds)."""
    directory = Path(tempfile.mkdtemp(prefix="fq-", dir="/tmp"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def replicated(connection_string: str) -> int:
    return sum(len(events) for events in read_all(connection_string, "b").values())


@pytest.mark.full(
    why="it idles 80 s past Spark's one-minute idle timeout of its worker factories (a constant); CI "
    "checks the quiet end on real socket pairs (test_worker_exit.py) and that a worker's real error "
    "keeps its traceback"
)
@pytest.mark.timeout(600)
def test_a_run_that_idles_past_the_workers_timeout_and_stops_prints_no_traceback_of_the_app_s_workers(
    emulator_factory: Any, tmp_path: Path, short_tmpdir: Path
) -> None:
    hubs = [{"name": name, "partitionCount": 2} for name in ("a", "b")]
    emulator = emulator_factory({"namespaces": [{"name": "ns1", "eventHubs": hubs}]})
    cs = emulator.connection_string("ns1")
    spec = {
        "source": eh_endpoint("ns1", "a"),
        "targets": [{"name": "b", **eh_endpoint("ns1", "b")}],
        "runtime": {"triggerIntervalSeconds": 0},
    }
    config = tmp_path / "task.json"
    config.write_text(json.dumps(task_config(tmp_path, emulator, spec)))
    log = tmp_path / "replicate.log"
    app = start_app(config, log, env={"TMPDIR": str(short_tmpdir)})
    try:
        send(cs, "a", [{"body": f"e{i}", "partition": str(i % 2)} for i in range(10)])
        # Every kind of Python worker has served: the planners, the read and write tasks, the commit.
        eventually(lambda: replicated(cs) == 10, 240, "the events did not reach the target")
        time.sleep(FACTORY_IDLE_TIMEOUT_S + 20)  # the JVM closes every idle worker's socket meanwhile
        assert app.poll() is None, log.read_text()[-3000:]
        app.send_signal(signal.SIGTERM)  # and a stop closes those of the workers used since
        assert app.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()

    output = log.read_text()
    assert "too long a path for Unix domain sockets" not in output  # over TCP, a worker's flush succeeds
    idle, stop = output.split("stopping the query", 1)
    assert "Traceback" not in idle, idle[-6000:]
    assert "Traceback" not in stop, stop[-6000:]


def test_an_error_in_a_reused_worker_still_reaches_the_driver_with_its_traceback(spark: Any) -> None:
    def fails(_: object) -> None:
        raise ValueError("a real error in the worker")

    spark.sparkContext.parallelize([0], 1).count()  # a worker that is then reused for the failing task
    with pytest.raises(Exception) as raised:
        spark.sparkContext.parallelize([0], 1).map(fails).collect()

    assert "Traceback (most recent call last)" in str(raised.value)
    assert "ValueError: a real error in the worker" in str(raised.value)
