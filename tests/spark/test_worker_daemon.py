"""The daemon that forks the app's task workers (``federator_spark/worker_daemon.py``, named by the contract's
``spark.python.daemon.module``): PySpark's own, after importing and freezing the modules every worker
imports, so that the workers share those pages with it instead of each keeping a copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from federator_contract.sparkconf import APP_SPARK_CONF, WORKER_DAEMON
from federator_spark import worker_daemon

PRELOAD = """
import gc, json, os, sys
from federator_spark import worker_daemon
worker_daemon.preload()
print(json.dumps({
    "threads": len(os.listdir("/proc/self/task")),
    "loaded": [name for name in worker_daemon.PRELOADED if name in sys.modules],
    "threads_named": [open(f"/proc/self/task/{t}/comm").read() for t in os.listdir("/proc/self/task")],
    "frozen": gc.get_freeze_count(),
}))
"""


def test_every_session_of_the_app_runs_its_task_workers_under_this_daemon() -> None:
    assert APP_SPARK_CONF["spark.python.daemon.module"] == WORKER_DAEMON == worker_daemon.__name__


def test_the_daemon_imports_the_workers_modules_and_freezes_them_without_starting_a_thread() -> None:
    run = subprocess.run([sys.executable, "-c", PRELOAD], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    preloaded = json.loads(run.stdout)

    assert preloaded["loaded"] == list(worker_daemon.PRELOADED)
    assert "pyarrow" in preloaded["loaded"]
    assert preloaded["frozen"] > 10_000  # the modules' objects, skipped by every collection after
    # A fork copies only the thread that forks: a lock another thread held would stay locked in every
    # worker. pyarrow's allocator starts one when pyarrow is imported, unless told not to.
    assert preloaded["threads"] == 1, preloaded["threads_named"]


def test_pyarrow_s_allocator_is_told_to_start_no_thread_after_any_configuration_it_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(worker_daemon.ARROW_JEMALLOC_CONF, raising=False)
    worker_daemon.without_allocator_thread()
    assert os.environ[worker_daemon.ARROW_JEMALLOC_CONF] == "background_thread:false"

    monkeypatch.setenv(worker_daemon.ARROW_JEMALLOC_CONF, "dirty_decay_ms:1000,background_thread:true")
    worker_daemon.without_allocator_thread()
    assert os.environ[worker_daemon.ARROW_JEMALLOC_CONF] == (
        "dirty_decay_ms:1000,background_thread:true,background_thread:false"  # the last one wins
    )


def test_a_task_runs_in_a_worker_forked_by_it_with_the_modules_already_frozen(spark: Any) -> None:
    def inside_the_worker(_: object) -> dict[str, Any]:
        import gc
        import os
        import sys

        with open(f"/proc/{os.getppid()}/cmdline", "rb") as cmdline:
            daemon = cmdline.read().split(b"\0")
        return {
            "daemon": [part.decode() for part in daemon if part],
            "replication_loaded": "federator_spark.sinks.replication" in sys.modules,
            "frozen": gc.get_freeze_count(),
        }

    (worker,) = spark.sparkContext.parallelize([0], 1).map(inside_the_worker).collect()

    assert worker["daemon"][1:3] == ["-m", WORKER_DAEMON]
    assert worker["replication_loaded"] is True  # imported before the fork, not by this task
    assert worker["frozen"] > 10_000
