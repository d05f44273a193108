"""Spark tests: one local[2] session for the whole run, the emulator per test, and helpers that
publish and read events with the real SDKs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

VENV_PYTHON = sys.executable


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # The session's JVM and Python workers read these when it starts; undone when it stops, so that no
    # test after it runs in an environment it did not set itself.
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("PYSPARK_PYTHON", VENV_PYTHON)
        environment.setenv("PYSPARK_DRIVER_PYTHON", VENV_PYTHON)
        environment.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        session = _session()
        try:
            yield session
        finally:
            session.stop()


def _session() -> Any:
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
    return session
