"""The Spark settings every replication app runs with, wherever its JVMs start: the operator writes them
into each SparkApplication (and local mode's ``spark-submit``), and the app's session builder sets them
for a JVM it starts itself (benchmarks, tests). A task's ``runtime.sparkConf`` overrides any of them."""

from __future__ import annotations

JIT_OPTIONS = "-XX:TieredStopAtLevel=1"
"""Compile with the JVM's quick compiler (C1) only. The app's JVMs plan and schedule micro-batches while
Python moves the events, so the hot code is Spark's planning, run a few times a second: the optimising
compiler (C2) was still compiling it minutes into a run, a quarter to two fifths of one of two cores
(bench.replication's latency run, 2026-11-28), and C1-compiled code planned a batch as fast."""

HEAP_OPTIONS = "-XX:+UseSerialGC -Xms32m"
"""A heap grown from what is used rather than shrunk from 1/64 of the machine's memory, and kept compact by
the serial collector (what the JVM picks by itself on a pod of one CPU or under 1,792 MB): one
application's JVM 79-165 MB smaller, with no latency cost measured in bench.replication (docs/replication.md,
"Memory of one application")."""

JAVA_OPTIONS = f"{JIT_OPTIONS} {HEAP_OPTIONS}"
"""Every JVM of the app (driver and executors)."""

WORKER_DAEMON = "federator_spark.worker_daemon"
"""The daemon that forks the Python workers of the app's tasks: PySpark's own, started after importing
the modules every worker imports (pure Python) and freezing them, so that the workers share those pages
with it instead of each holding a copy (docs/replication.md, "Memory of one application")."""

APP_SPARK_CONF = {
    "spark.sql.session.timeZone": "UTC",
    # The defaults an administrator's image would set: a task's extraJavaOptions add to them.
    "spark.driver.defaultJavaOptions": JAVA_OPTIONS,
    "spark.executor.defaultJavaOptions": JAVA_OPTIONS,
    "spark.python.daemon.module": WORKER_DAEMON,
}
