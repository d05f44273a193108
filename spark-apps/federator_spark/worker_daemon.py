"""The daemon that forks the Python workers of the app's tasks (``spark.python.daemon.module``): PySpark's
own, after importing the modules every task worker imports and freezing them (``worker_gc``). A forked
worker then shares those modules' pages with the daemon and with the other workers, where each imported
and kept a copy of its own before (docs/replication.md, "Memory of one application"). A worker the JVM
lets go while it waits for its next task ends quietly (``worker_exit``).
"""

from __future__ import annotations

import importlib
import os

from federator_spark.worker_exit import quiet_daemon
from federator_spark.worker_gc import freeze_loaded

# Imported before the daemon forks: what a read or write task imports. A fork copies only the thread that
# forks, so a lock another thread held would stay locked in every worker: nothing here may start a thread.
PRELOADED = (
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "federator_spark.datasources",
    "federator_spark.sinks.replication",
    "federator_spark.sinks.eventhubs",
    "federator_spark.sinks.servicebus",
    "federator_spark.sources.eventhubs_slices",
    "federator_spark.sources.servicebus_slices",
    "pyarrow",  # PySpark's data source tasks move their rows with Arrow
)

# pyarrow's jemalloc starts a background thread (which returns freed pages to the system) when pyarrow is
# imported, unless its configuration says not to; jemalloc then does that work in the threads that free
# memory. Without the thread, the daemon can import pyarrow before it forks, and the workers share what it
# made at import instead of each making its own (10-20 MB in all, bench.replication). Later options win in
# jemalloc's configuration.
ARROW_JEMALLOC_CONF = "JE_ARROW_MALLOC_CONF"
NO_BACKGROUND_THREAD = "background_thread:false"


def without_allocator_thread() -> None:
    """Tell pyarrow's jemalloc, before pyarrow is imported, to start no thread of its own."""
    conf = os.environ.get(ARROW_JEMALLOC_CONF)
    os.environ[ARROW_JEMALLOC_CONF] = f"{conf},{NO_BACKGROUND_THREAD}" if conf else NO_BACKGROUND_THREAD


def preload() -> None:
    """Import the workers' modules and freeze them: the forked workers' collections then never touch
    (and so never copy) the daemon's pages."""
    without_allocator_thread()
    for name in PRELOADED:
        importlib.import_module(name)
    freeze_loaded()


def main() -> None:
    preload()
    from pyspark import daemon

    quiet_daemon(daemon)
    daemon.manager()


if __name__ == "__main__":
    main()
