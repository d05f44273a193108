"""``bench.replication --conf spark.kubernetes.driverEnv.NAME=VALUE`` starts the session's JVM (and so its
Python workers) with ``NAME=VALUE``, as a driver pod gets it: how an environment variable's effect on the
application's memory and speed is measured against the same run's defaults."""

from __future__ import annotations

import sys

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.replication import driver_environment


def test_the_driver_environment_is_what_the_settings_name_for_the_driver() -> None:
    conf = [
        "spark.kubernetes.driverEnv.MALLOC_ARENA_MAX=2",
        "spark.kubernetes.driverEnv.JAVA_TOOL_OPTIONS=-Da=b",
        "spark.executorEnv.MALLOC_ARENA_MAX=4",
        "spark.driver.defaultJavaOptions=-XX:+UseSerialGC",
    ]
    assert driver_environment(conf) == {"MALLOC_ARENA_MAX": "2", "JAVA_TOOL_OPTIONS": "-Da=b"}


def test_settings_that_name_no_driver_environment_give_none() -> None:
    assert driver_environment([]) == {}
    assert driver_environment(["spark.executorEnv.A=1", "spark.kubernetes.driverEnvA=1"]) == {}
