"""The Spark settings every runner of the app starts its session with: the app (on Kubernetes and in local
mode), local mode's host, the benchmarks and the tests."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from federator_contract.sparkconf import APP_SPARK_CONF

logger = logging.getLogger(__name__)

# spark-apps/jvm: Hadoop's local file system without a `chmod` process per file it creates (Spark creates
# four per micro-batch for its checkpoint logs). `spark-apps/jvm/build-jar` puts the jar among Spark's.
FILE_SYSTEM_JAR = "federator-hadoop.jar"
FILE_SYSTEM_SETTING = "spark.hadoop.fs.file.impl"  # the class Hadoop serves file:// paths with
LOCAL_FILE_SYSTEM = "federator.hadoop.LocalFileSystem"
# Python workers and the driver's Python runners reach the JVM over Unix domain sockets instead of TCP on
# loopback, where Nagle's algorithm meets delayed acknowledgements: a write task waited ~40 ms for its
# first rows in every batch (bench.spark_floor).
UNIX_SOCKETS_SETTING = "spark.python.unix.domain.socket.enabled"
UNIX_SOCKETS_DIR_SETTING = "spark.python.unix.domain.socket.dir"
# Spark refuses a socket directory longer than 61 characters (its check of the setting, Spark 4: each
# socket is "<dir>/.<uuid4>.sock", 43 bytes more, within the 104 bytes a socket's path holds on macOS; Linux
# allows 107). A longer one failed every query of the application instead of falling back to TCP.
_SOCKET_DIR_LIMIT = 61


# Python runs a ``sitecustomize`` module it finds on its path when it starts: this directory's prepares the
# daemons of Spark's data source planners, whose module is not a setting (``worker_daemon``). Spark puts the
# workers' environment's PYTHONPATH after its own and before the JVM's.
PLANNER_SITE = Path(__file__).parent / "planner_site"
WORKERS_PATH_SETTING = "spark.executorEnv.PYTHONPATH"


def spark_home() -> Path:
    """The Spark the JVM this process starts (or joins) runs, as pyspark itself decides: ``SPARK_HOME``,
    else the pyspark distribution installed here."""
    home = os.environ.get("SPARK_HOME")
    return Path(home) if home else Path(pyspark.__file__).parent


def spark_jars() -> Path:
    """Where that JVM finds Spark's jars."""
    return spark_home() / "jars"


def python_sockets() -> dict[str, str]:
    """Unix domain sockets in this process's temporary directory (``TMPDIR``: /tmp in the pods, the app's
    own in local mode), the JVM's and Python's alike; TCP where that directory's path is too long for a
    socket's."""
    directory = tempfile.gettempdir()
    if len(os.fsencode(directory)) > _SOCKET_DIR_LIMIT:
        logger.warning(
            "%s is too long a path for Unix domain sockets: Python workers reach the JVM over TCP, which "
            "delays each task's first rows (a shorter TMPDIR avoids it)",
            directory,
        )
        return {UNIX_SOCKETS_SETTING: "false"}
    return {UNIX_SOCKETS_SETTING: "true", UNIX_SOCKETS_DIR_SETTING: directory}


def python_workers_path() -> dict[str, str]:
    """The directory every Python process Spark starts for the app finds first after Spark's own archives:
    its ``sitecustomize`` prepares the planners' daemons and the query's source runner (``worker_daemon``)."""
    return {WORKERS_PATH_SETTING: str(PLANNER_SITE)}


def settings() -> dict[str, str]:
    """Spark settings by name; Hadoop's own local file system stays when the jar is missing."""
    chosen = {**APP_SPARK_CONF, **python_sockets(), **python_workers_path()}
    jar = spark_jars() / FILE_SYSTEM_JAR
    if jar.is_file():
        chosen[FILE_SYSTEM_SETTING] = LOCAL_FILE_SYSTEM
    else:
        logger.warning("%s is missing: each checkpoint file Spark writes costs a chmod process", jar)
    return chosen


def configured(builder: SparkSession.Builder) -> SparkSession.Builder:
    """``builder`` with the settings above."""
    for key, value in settings().items():
        builder = builder.config(key, value)
    return builder


def launch_jvm() -> None:
    """Start the JVM, unless spark-submit runs this driver (a cluster's), with the app's Spark settings:
    their Java options (``federator_contract.sparkconf``) count only when the JVM starts. Without them
    the host's JVM compiled with C2 and collected with G1 (a fifth of a core compiling, minutes into a
    run). ``PYSPARK_SUBMIT_ARGS`` (local mode's settings) come after these and win."""
    conf = SparkConf(loadDefaults=False).setAll(list(settings().items()))
    SparkContext._ensure_initialized(conf=conf)
