"""Python imports this module at its start in every Python process Spark starts for the app: the app's
sessions put this directory on their Python workers' path (``spark_settings``). In the daemon of one of
Spark's data source planners (PySpark's own daemon: its module is not a setting), the app's modules are
imported and frozen before it forks, and a query's source runner is spared re-reading zip archives at its
start (``worker_daemon.prepare_at_start``); elsewhere nothing.

Python imports one ``sitecustomize``, the first on its path: the one this directory hides (the image's, or
one a test or an administrator put on PYTHONPATH) runs first. Only the processes above import
``worker_daemon`` here: the tasks' daemon runs that module as ``__main__``, which Python warns about when the
module was imported before."""

import importlib.machinery
import importlib.util
import os
import sys


def _run_the_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    later = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


_run_the_hidden_sitecustomize()

if {"pyspark.daemon", "pyspark.sql.streaming.python_streaming_source_runner"} & set(sys.orig_argv):
    from federator_spark.worker_daemon import prepare_at_start

    prepare_at_start()
