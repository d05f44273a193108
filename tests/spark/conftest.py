"""Spark tests: one local[2] session for the whole run, the emulator per test, and helpers that
publish and read events with the real SDKs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

VENV_PYTHON = sys.executable


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = VENV_PYTHON
    os.environ["PYSPARK_DRIVER_PYTHON"] = VENV_PYTHON
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from federator_spark import spark_settings
    from federator_spark.datasources import register

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("federator-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    session = spark_settings.configured(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
