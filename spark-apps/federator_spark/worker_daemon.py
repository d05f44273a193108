"""The daemon that forks the Python workers of the app's tasks (``spark.python.daemon.module``): PySpark's
own, after importing the modules every task worker imports and freezing them (``worker_gc``). A forked
worker then shares those modules' pages with the daemon and with the other workers, where each imported
and kept a copy of its own before (docs/replication.md, "Memory of one application").
"""

from __future__ import annotations

import importlib

from federator_spark.worker_gc import freeze_loaded

# Imported before the daemon forks: what a read or write task imports, pure Python only. PySpark's daemon
# imports a worker's modules after the fork because some start threads (pyarrow does: a fork copies
# no thread, so a lock one held stays locked in the child), hence no pyarrow here.
PRELOADED = (
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "federator_spark.datasources",
    "federator_spark.sinks.replication",
    "federator_spark.sinks.eventhubs",
    "federator_spark.sinks.servicebus",
    "federator_spark.sources.eventhubs_slices",
    "federator_spark.sources.servicebus_slices",
)


def preload() -> None:
    """Import the workers' modules and freeze them: the forked workers' collections then never touch
    (and so never copy) the daemon's pages."""
    for name in PRELOADED:
        importlib.import_module(name)
    freeze_loaded()


def main() -> None:
    preload()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
