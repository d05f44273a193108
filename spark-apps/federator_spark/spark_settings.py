"""The Spark settings every runner of the app starts its session with: the app (on Kubernetes and in local
mode), local mode's host, the benchmarks and the tests."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

# spark-apps/jvm: Hadoop's local file system without a `chmod` process per file it creates (Spark creates
# four per micro-batch for its checkpoint logs). `spark-apps/jvm/build-jar` puts the jar among Spark's.
FILE_SYSTEM_JAR = "federator-hadoop.jar"
FILE_SYSTEM_SETTING = "spark.hadoop.fs.file.impl"  # the class Hadoop serves file:// paths with
LOCAL_FILE_SYSTEM = "federator.hadoop.LocalFileSystem"
# Python workers and the driver's Python runners reach the JVM over Unix domain sockets instead of TCP on
# loopback, where Nagle's algorithm meets delayed acknowledgements: a write task waited ~40 ms for its
# first rows in every batch (bench.spark_floor). The socket files go to java.io.tmpdir (/tmp).
UNIX_SOCKETS_SETTING = "spark.python.unix.domain.socket.enabled"


def spark_jars() -> Path:
    """Where the JVM this process starts (or joins) finds Spark's jars, as pyspark itself decides."""
    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


def settings() -> dict[str, str]:
    """Spark settings by name; Hadoop's own local file system stays when the jar is missing."""
    chosen = {"spark.sql.session.timeZone": "UTC", UNIX_SOCKETS_SETTING: "true"}
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
