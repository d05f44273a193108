"""The shared driver schedules FAIR unless the application was submitted with another mode: the operator
writes `scheduling.mode` into the application's Spark settings, which spark-submit hands to the JVM, so
the driver reads them there (a SparkConf made before the JVM's gateway is up is empty). Under FAIR its
session has the two pools of ``federator_spark.pools``, unless the application names an allocation file
of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from federator_spark.pools import MEMBERS_MIN_SHARE

pytestmark = [pytest.mark.slow, pytest.mark.jvm]

READ = "from federator_spark.pools import submitted_scheduler_mode; print(submitted_scheduler_mode())"


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


POOLS = """
import json, tempfile
from pathlib import Path
from pyspark.sql import SparkSession
from federator_spark import pools
with tempfile.TemporaryDirectory() as directory:  # as the host's main: Spark reads it as its context starts
    settings = pools.scheduler_settings(Path(directory))
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").config(map=settings)
    spark = spark.getOrCreate()
context = spark.sparkContext
root = context._jsc.sc().taskScheduler().rootPool()
members = root.getSchedulableByName(pools.MEMBERS_POOL)
behind = root.getSchedulableByName(pools.CATCHING_UP_POOL)
told = {"file": context.getConf().get(pools.ALLOCATION_FILE_SETTING), "pools": members is not None}
if members is not None:
    fair = context._jvm.org.apache.spark.scheduler.FairSchedulingAlgorithm()
    members.increaseRunningTasks(2)  # both slots taken by members' batches
    told.update(
        members=[members.minShare(), members.schedulingMode().toString()],
        behind=[behind.minShare(), behind.schedulingMode().toString()],
        members_first=fair.comparator(members, behind),
        behind_first=fair.comparator(behind, members),
    )
print(json.dumps(told))
"""


def pools_submitted_with(*conf: str) -> dict[str, object]:
    """What the host's scheduler settings make of the application's ``conf``: Spark's pools, as it built
    them from the allocation file, and which of the two its FAIR ordering serves first."""
    environment = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    environment["PYSPARK_SUBMIT_ARGS"] = " ".join([*conf, "pyspark-shell"])
    done = subprocess.run(
        [sys.executable, "-c", POOLS], env=environment, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    told: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return told


def test_under_fair_the_members_pool_is_served_before_the_catching_up_pool_even_with_every_slot() -> None:
    told = pools_submitted_with()
    assert told["members"] == [MEMBERS_MIN_SHARE, "FIFO"] and told["behind"] == [0, "FIFO"]
    assert (told["members_first"], told["behind_first"]) == (True, False)


def test_an_allocation_file_the_application_names_is_kept(tmp_path: Path) -> None:
    own = tmp_path / "pools.xml"
    own.write_text('<?xml version="1.0"?><allocations><pool name="teams"/></allocations>', encoding="utf-8")
    told = pools_submitted_with("--conf", f"spark.scheduler.allocation.file={own}")
    assert told == {"file": str(own), "pools": False}
