"""The daemons of Spark's data source planners import the app's modules before they fork, and the planners a
query uses only at its start are not kept (``worker_daemon.prepare_at_start``, run by
``planner_site/sitecustomize.py``, which every session of the app puts on its Python workers' path); the
tasks' daemon of the read pool imports no writer (docs/replication.md, "Memory of one application")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from federator_spark import spark_settings, worker_daemon
from federator_spark.datasources import POOL_VARIABLE, READ_POOL

CREATE = "pyspark.sql.worker.create_data_source"
PLAN_READ = "pyspark.sql.worker.plan_data_source_read"
WRITE = "pyspark.sql.worker.write_into_data_source"
COMMIT = "pyspark.sql.worker.python_streaming_sink_runner"
LOOKUP = "pyspark.sql.worker.lookup_data_sources"
READ_POOL_ENV = {POOL_VARIABLE: READ_POOL}

# A process that plays the planner's daemon started as Spark starts it: its command line, a ``worker``
# function in ``__main__`` as PySpark's daemon has, then the preparation sitecustomize runs, a fork, and what
# the forked worker finds.
PLAYED_DAEMON = """
import gc, json, os, sys
sys.orig_argv = [sys.executable, "-m", "pyspark.daemon", sys.argv[1]]
if len(sys.argv) > 2:
    os.environ["FEDERATOR_PYTHON_POOL"] = sys.argv[2]

def worker(sock, authenticated):
    return 0

from federator_spark import worker_daemon
watched = ("federator_", "pyarrow", "pyd", "azure")
before = set(sys.modules)
worker_daemon.prepare_at_start()
daemon = {
    "threads": len(os.listdir("/proc/self/task")),
    "frozen": gc.get_freeze_count(),
    "loaded": sorted(m for m in set(sys.modules) - before if m.startswith(watched)),
}
read, write = os.pipe()
if os.fork() == 0:
    import pyspark.sql.worker.utils as utils
    main = sys.modules["__main__"]
    os.write(write, json.dumps({
        "worker": type(main.worker).__name__,
        "write_int": type(utils.write_int).__name__,
    }).encode())
    os._exit(0)
os.close(write)
print(json.dumps({"daemon": daemon, "forked": json.loads(os.read(read, 4096))}))
"""


def played(module: str, pool: str | None = None) -> dict[str, Any]:
    command = [sys.executable, "-c", PLAYED_DAEMON, module, *([pool] if pool else [])]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def test_only_pyspark_s_own_daemon_started_for_a_planner_module_is_a_planner_s_daemon() -> None:
    python = sys.executable
    assert worker_daemon.planner_served([python, "-m", "pyspark.daemon", CREATE]) == CREATE
    assert worker_daemon.planner_served([python, "-u", "-m", "pyspark.daemon", WRITE]) == WRITE
    others = [
        ["-m", "federator_spark.worker_daemon", "pyspark.worker"],  # the tasks' daemon
        ["-m", "pyspark.sql.streaming.python_streaming_source_runner"],  # a query's source runner
        ["-m", "pyspark.daemon"],
        ["spark-apps/replicate.py"],  # the driver
    ]
    for command in others:
        assert worker_daemon.planner_served([python, *command]) == "", command


def test_each_planner_s_daemon_imports_what_its_workers_run_in_its_environment() -> None:
    # The writer's environment: its data source is made, asked for each batch's writer and committed.
    assert "federator_spark.plan" in (worker_daemon.planner_preloads(CREATE, {}) or ())
    for per_batch in (WRITE, COMMIT):
        assert "federator_spark.sinks.replication" in (worker_daemon.planner_preloads(per_batch, {}) or ())
    # The read pool's: the slice source is made and its reads planned; no writer's modules there.
    for planner in (CREATE, PLAN_READ):
        preloads = worker_daemon.planner_preloads(planner, READ_POOL_ENV) or ()
        assert "federator_spark.sources.eventhubs_slices" in preloads
        assert not any(name.startswith("federator_spark.sinks") for name in preloads)
        assert "federator_spark.plan" not in preloads
    # Spark's lookup runs none of the app's data sources; nor does a writer's planner in the read pool.
    assert worker_daemon.planner_preloads(LOOKUP, {}) is None
    assert worker_daemon.planner_preloads(WRITE, READ_POOL_ENV) is None
    assert worker_daemon.planner_preloads(PLAN_READ, {}) is None


def test_the_tasks_daemon_of_the_read_pool_imports_no_writer() -> None:
    reads = worker_daemon.task_preloads(READ_POOL_ENV)
    assert "pyarrow" in reads and "federator_spark.sources.eventhubs_slices" in reads
    assert not any(name.startswith("federator_spark.sinks") for name in reads)
    assert worker_daemon.task_preloads({}) == worker_daemon.PRELOADED
    assert set(reads) < set(worker_daemon.PRELOADED)


def test_a_query_start_planner_s_daemon_preloads_and_its_workers_are_not_kept() -> None:
    result = played(CREATE)

    daemon = result["daemon"]
    assert {"federator_spark.datasources", "federator_spark.plan"} <= set(daemon["loaded"])
    assert daemon["frozen"] > 10_000  # its workers' collections never touch (and copy) these pages
    assert daemon["threads"] == 1  # a fork copies only the forking thread
    # Its worker ends quietly when the JVM lets it go, and answers the JVM's end of stream with "not kept".
    assert result["forked"] == {"worker": "QuietWhenClosed", "write_int": "NotKept"}


def test_the_read_pool_s_planners_preload_the_source_and_are_not_kept() -> None:
    result = played(PLAN_READ, READ_POOL)

    assert "federator_spark.sources.eventhubs_slices" in result["daemon"]["loaded"]
    assert not any(name.startswith("federator_spark.sinks") for name in result["daemon"]["loaded"])
    assert "pyarrow" in result["daemon"]["loaded"]  # Spark's module imports it, told to start no thread
    assert result["daemon"]["threads"] == 1
    assert result["forked"] == {"worker": "QuietWhenClosed", "write_int": "NotKept"}


# The task's API models and what checks them: the driver's (``planning``). A daemon that imported them held
# 14 MB more, and a fresh worker that did took 0.4 s more to import a plan (docs/replication.md).
MODELS = (
    "pydantic",
    "jsonschema",
    "federator_contract.api",
    "federator_contract.taskconfig",
    "federator_spark.planning",
)


@pytest.mark.parametrize(
    ("planner", "pool"),
    [(CREATE, None), (WRITE, None), (COMMIT, None), (CREATE, READ_POOL), (PLAN_READ, READ_POOL)],
)
def test_no_planner_s_daemon_imports_the_task_s_models(planner: str, pool: str | None) -> None:
    loaded = played(planner, pool)["daemon"]["loaded"]

    assert "federator_spark.datasources" in loaded
    assert [name for name in loaded if name.startswith(MODELS)] == []


def tasks_daemon_loaded(pool: str | None) -> list[str]:
    """What the tasks' daemon of a pool imports before it forks (of the app's, the models' and the SDK's)."""
    environment = {POOL_VARIABLE: pool} if pool else {}
    code = (
        "import json, sys\nfrom federator_spark import worker_daemon\n"
        f"worker_daemon.preload(worker_daemon.task_preloads({environment!r}))\n"
        "watched = ('federator_', 'pyd', 'json', 'azure')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(watched))))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    loaded: list[str] = json.loads(run.stdout)
    return loaded


@pytest.mark.parametrize("pool", [None, READ_POOL])
def test_the_tasks_daemon_imports_none_of_the_task_s_models(pool: str | None) -> None:
    assert [name for name in tasks_daemon_loaded(pool) if name.startswith(MODELS)] == []


def test_only_the_processes_that_receive_or_send_import_the_sdk() -> None:
    """A write task receives its slices' events and sends them: its daemon imports the SDK once for all its
    workers. A read task, and the planners of the read pool's query start, only plan and checkpoint ranges
    (7 MB a process less)."""
    assert "azure.eventhub" in tasks_daemon_loaded(None)
    assert [name for name in tasks_daemon_loaded(READ_POOL) if name.startswith("azure")] == []
    for planner in (CREATE, PLAN_READ):
        loaded = played(planner, READ_POOL)["daemon"]["loaded"]
        assert [name for name in loaded if name.startswith("azure")] == [], planner


def test_a_per_batch_planner_s_workers_are_kept_for_the_next_batch() -> None:
    result = played(COMMIT)

    assert "federator_spark.sinks.replication" in result["daemon"]["loaded"]
    assert result["daemon"]["threads"] == 1
    assert result["forked"] == {"worker": "QuietWhenClosed", "write_int": "function"}


def test_a_process_that_is_no_planner_s_daemon_is_left_as_it_is() -> None:
    result = played(LOOKUP)

    assert result["daemon"]["loaded"] == [] and result["daemon"]["frozen"] == 0
    assert result["forked"] == {"worker": "function", "write_int": "function"}


def test_every_session_of_the_app_puts_the_planners_preparation_on_its_workers_path() -> None:
    assert spark_settings.python_workers_path().items() <= spark_settings.settings().items()
    path = spark_settings.settings()[spark_settings.WORKERS_PATH_SETTING]

    assert path == str(spark_settings.PLANNER_SITE)
    assert (spark_settings.PLANNER_SITE / "sitecustomize.py").is_file()


def test_a_sitecustomize_the_app_s_hides_on_the_workers_path_still_runs_first(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys\nsys.hidden_ran = True\n")
    path = os.pathsep.join([str(spark_settings.PLANNER_SITE), str(hidden)])
    code = "import sys, sitecustomize; print(sitecustomize.__file__, getattr(sys, 'hidden_ran', False))"

    run = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True
    )

    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == [str(spark_settings.PLANNER_SITE / "sitecustomize.py"), "True"]
