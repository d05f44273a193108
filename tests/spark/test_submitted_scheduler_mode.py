"""The shared driver schedules FAIR unless the application was submitted with another mode: the operator
writes `scheduling.mode` into the application's Spark settings, which spark-submit hands to the JVM, so
the driver reads them there (a SparkConf made before the JVM's gateway is up is empty)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.jvm]

READ = "from federator_spark.host import submitted_scheduler_mode; print(submitted_scheduler_mode())"


def mode_submitted_with(*conf: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    if conf:  # as spark-submit passes the application's Spark settings
        environment["PYSPARK_SUBMIT_ARGS"] = " ".join([*conf, "pyspark-shell"])
    done = subprocess.run(
        [sys.executable, "-c", READ], env=environment, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_fifo_asked_for_in_the_spark_settings_is_kept() -> None:
    assert mode_submitted_with("--conf", "spark.scheduler.mode=FIFO") == "FIFO"


def test_fair_when_the_settings_name_no_mode() -> None:
    assert mode_submitted_with() == "FAIR"
