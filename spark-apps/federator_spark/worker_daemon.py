"""The daemon that forks the Python workers of the app's tasks (``spark.python.daemon.module``): PySpark's
own, after importing the modules its workers import and freezing them (``worker_gc``). A forked worker then
shares those modules' pages with the daemon and with the other workers, where each imported and kept a copy
of its own before (docs/replication.md, "Memory of one application"). A worker the JVM lets go while it
waits for its next task ends quietly (``worker_exit``).

Spark's data source planners fork their workers from PySpark's own daemon, one per planner module and
environment, whose module is not a setting. Python runs ``planner_site/sitecustomize.py`` at the start of
each (the app's sessions put that directory on their Python workers' path, ``spark_settings``), and
:func:`prepare_at_start` there does for a planner's daemon what this module does for the tasks'.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
import zipimport
from collections.abc import Mapping
from functools import partial
from itertools import pairwise
from typing import Any

from federator_spark import worker_exit
from federator_spark.worker_exit import quiet_daemon
from federator_spark.worker_gc import collect_young_after_tasks, freeze_loaded

# Imported before a daemon forks: what its workers import. A fork copies only the thread that forks, so a
# lock another thread held would stay locked in every worker: nothing here may start a thread.
READ_TASKS = (
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "federator_spark.datasources",
    "federator_spark.sources.eventhubs_slices",
    "federator_spark.sources.servicebus_slices",
    "pyarrow",  # PySpark's data source tasks move their rows with Arrow
)
"""What a read task imports: the tasks' daemon of the read pool (``datasources.register_in_pool``)."""

PRELOADED = (
    *READ_TASKS,
    "federator_spark.sources.eventhubs_frames",  # a write task's receivers, and the SDK
    "federator_spark.sinks.replication",
    "federator_spark.sinks.eventhubs",
    "federator_spark.sinks.servicebus",
)
"""What a write task imports too: the tasks' daemon of every other environment."""

# A task's data sources travel pickled by value (``datasources.bind``): unpickling its writer imports the
# plan's modules; the slice source's schema and reader import the slices' module.
_SOURCE = ("federator_spark.datasources", "federator_spark.sources.eventhubs_slices")
_WRITER = ("federator_spark.datasources", "federator_spark.plan")
_WRITES = (
    *_WRITER,
    "federator_spark.sources.eventhubs_slices",
    "federator_spark.sinks.replication",
    "federator_spark.sinks.eventhubs",
    "pyarrow",  # ``write_into_data_source`` imports it at each use
)

PLANNER_PRELOADS: Mapping[str, tuple[str, ...]] = {
    "pyspark.sql.worker.create_data_source": _WRITER,
    # Every batch: Spark asks for a writer (``ReplicationWriter``), then commits what it wrote.
    "pyspark.sql.worker.write_into_data_source": _WRITES,
    "pyspark.sql.worker.python_streaming_sink_runner": _WRITES,
}
"""What the daemon of each of Spark's data source planners imports before it forks, besides the planner's
own module, in the environment of the app's writers: what the planner's workers import to run them."""

SOURCE_PLANNER_PRELOADS: Mapping[str, tuple[str, ...]] = {
    "pyspark.sql.worker.create_data_source": _SOURCE,
    "pyspark.sql.worker.plan_data_source_read": _SOURCE,  # its own module imports pyarrow
}
"""The same in the read pool's environment, the slice sources'. Spark's lookup of registered data sources,
which runs none of the app's, is in neither."""

PYSPARK_DAEMON_ARGS = ["-m", worker_exit.PYSPARK_DAEMON]
SOURCE_RUNNER_ARGS = ("-m", "pyspark.sql.streaming.python_streaming_source_runner")
"""A query's streaming source runner: a process of its own for each query, started, not forked."""

# pyarrow's jemalloc starts a background thread (which returns freed pages to the system) when pyarrow is
# imported, unless its configuration says not to; jemalloc then does that work in the threads that free
# memory. Without the thread, the daemon can import pyarrow before it forks, and the workers share what it
# made at import instead of each making its own (10-20 MB in all, bench.replication). Later options win in
# jemalloc's configuration.
ARROW_JEMALLOC_CONF = "JE_ARROW_MALLOC_CONF"
NO_BACKGROUND_THREAD = "background_thread:false"

# glibc gives each thread that allocates while another holds the main heap an arena of its own, up to eight
# per core, each a 64 MB reservation that keeps what it touched. A write worker's SDK threads made 15-16 MB of
# them; they run Python under one lock, so they seldom allocate at the same time (docs/replication.md).
M_ARENA_MAX = -8  # mallopt's parameter, <malloc.h>
TASK_MALLOC_ARENAS = 2


def without_allocator_thread() -> None:
    """Tell pyarrow's jemalloc, before pyarrow is imported, to start no thread of its own."""
    conf = os.environ.get(ARROW_JEMALLOC_CONF)
    os.environ[ARROW_JEMALLOC_CONF] = f"{conf},{NO_BACKGROUND_THREAD}" if conf else NO_BACKGROUND_THREAD


def fewer_malloc_arenas(arenas: int = TASK_MALLOC_ARENAS) -> bool:
    """Cap glibc's ``malloc`` arenas in this process and the workers it forks afterwards (they inherit the
    setting); False where the C library has no ``mallopt`` or refuses."""
    try:
        return bool(ctypes.CDLL(None).mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


def preload(names: tuple[str, ...] = PRELOADED) -> None:
    """Import modules and freeze them: the forked workers' collections then never touch (and so never
    copy) the daemon's pages. And spare each worker's first use the re-reading of zip archives."""
    without_allocator_thread()
    for name in names:
        importlib.import_module(name)
    freeze_loaded()
    without_zip_rereads()


def without_zip_rereads() -> None:
    """Forget the importers of zip archives (PySpark's and py4j's, which Spark puts first on a worker's
    path): Python makes them again from its cache of their directories at the next import that needs
    them. A worker's first use adds Spark's files directory to its path and calls
    ``importlib.invalidate_caches()`` (``pyspark.worker_util.setup_spark_files``), which has every such
    importer re-read its whole archive: 19 of them after the preload, 0.2-0.9 s of every fresh planner
    worker. Archives do not change while the app runs; directories, which the call is for, are read anew."""
    for path, finder in list(sys.path_importer_cache.items()):
        if isinstance(finder, zipimport.zipimporter):
            del sys.path_importer_cache[path]


def in_read_pool(environ: Mapping[str, str]) -> bool:
    """Whether a daemon with this environment serves the read pool (``datasources.register_in_pool``)."""
    from federator_spark.datasources import POOL_VARIABLE, READ_POOL

    return environ.get(POOL_VARIABLE) == READ_POOL


def task_preloads(environ: Mapping[str, str]) -> tuple[str, ...]:
    """What the tasks' daemon with this environment imports before it forks."""
    return READ_TASKS if in_read_pool(environ) else PRELOADED


def planner_served(argv: list[str]) -> str:
    """The planner module a process started as ``python -m pyspark.daemon <module>`` (a command line,
    ``sys.orig_argv``) serves; "" for any other process."""
    for start in range(len(argv) - 2):
        if argv[start : start + 2] == PYSPARK_DAEMON_ARGS:
            return argv[start + 2]
    return ""


def planner_preloads(module: str, environ: Mapping[str, str]) -> tuple[str, ...] | None:
    """What the daemon of the planner ``module`` with this environment imports before it forks; None for a
    planner that runs none of the app's data sources there."""
    if module not in PLANNER_PRELOADS.keys() | SOURCE_PLANNER_PRELOADS.keys():
        return None  # without importing the app to learn its pool
    return (SOURCE_PLANNER_PRELOADS if in_read_pool(environ) else PLANNER_PRELOADS).get(module)


def prepare_at_start() -> None:
    """At the start of a Python process (``planner_site/sitecustomize.py``), if it is the daemon of a planner
    of the app's data sources: import what its workers import and freeze it (a worker then shares those
    pages, and a fresh one imports nothing), and adapt each worker it forks
    (``worker_exit.adapt_forked_planner``). In a query's source runner, spare its start the re-reading of
    zip archives. Nothing in any other process."""
    if SOURCE_RUNNER_ARGS in pairwise(sys.orig_argv):
        zip_rereads_spared_at_first_use()
        return
    module = planner_served(sys.orig_argv)
    preloads = planner_preloads(module, os.environ)
    if preloads is not None:
        preload((module, *preloads))
        os.register_at_fork(after_in_child=partial(worker_exit.adapt_forked_planner, module))


def zip_rereads_spared_at_first_use() -> None:
    """Forget the zip archives' importers just before a process's first use sets Spark's files up
    (``without_zip_rereads``), in a process that imports its modules itself: the source runner binds
    ``setup_spark_files`` when it is imported, after this."""
    util: Any = importlib.import_module("pyspark.worker_util")  # its names are imported, not exported
    setup = util.setup_spark_files

    def setup_spark_files(*args: Any) -> None:
        without_zip_rereads()
        setup(*args)

    util.setup_spark_files = setup_spark_files


def main() -> None:
    fewer_malloc_arenas()
    preload(task_preloads(os.environ))
    from pyspark import daemon

    quiet_daemon(daemon)
    collect_young_after_tasks(daemon)
    daemon.manager()


if __name__ == "__main__":
    main()
