"""Spark's lookup of statically registered Python data sources imports every top-level module named
``pyspark_*`` in a worker forked by PySpark's own daemon, once per session (``lookup_data_sources``).
That worker runs none of the app's code otherwise, so without this package it is the one idle worker left
to print a ``BrokenPipeError`` traceback when the JVM lets it go a minute later, and to idle that minute
(``worker_exit``: with this package, the JVM stops it after its use). It registers no data source: the app
registers its own at run time."""

from federator_spark import worker_exit

worker_exit.adapt_if_forked_by_pyspark_daemon()
