"""The queries a shared application's driver (``Host``) starts, against the emulator in the shared
local[2] session: a member that sets no trigger interval runs on Spark's processing-time trigger of
``MEMBER_TRIGGER_MS``, one that sets its own keeps it, and an application that lifts the pace
(``spark.federator.member.triggerIntervalMs: "0"``) starts its members as a task alone is started,
batches back to back; each still replicates."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import send
from test_fleet_queries import config, delivered, hubs, place, query, runs, wait_until
from test_shared_driver import running, stopped

from federator_spark.fleet import ConfigReader
from federator_spark.scheduling import MEMBER_TRIGGER_MS, MEMBER_TRIGGER_SETTING

pytestmark = pytest.mark.slow


@pytest.fixture
def unpaced(spark: Any) -> Iterator[Any]:
    """The session with the members' pace lifted, as an application's ``sparkConf`` would say."""
    spark.conf.set(MEMBER_TRIGGER_SETTING, "0")
    try:
        yield spark
    finally:
        spark.conf.unset(MEMBER_TRIGGER_SETTING)


def triggers(spark: Any, emulator_factory: Any, tmp_path: Path) -> dict[str, str]:
    """The trigger of each member's started query, once each has replicated an event: ``quick`` sets
    no trigger interval, ``slow`` one of 1 s."""
    emulator = emulator_factory(hubs("quick", "quick-copy", "slow", "slow-copy"))
    cs = emulator.connection_string("ns1")
    directory = tmp_path / "tasks"
    directory.mkdir()
    host, thread = running(spark, ConfigReader([directory]))
    try:
        place(directory, "quick.json", config(tmp_path, emulator, "quick", "quick", triggerIntervalSeconds=0))
        place(directory, "slow.json", config(tmp_path, emulator, "slow", "slow", triggerIntervalSeconds=1))
        for name in ("quick", "slow"):
            key, copy = f"default/{name}", f"{name}-copy"
            wait_until(partial(runs, host, key), f"{name} runs")
            send(cs, name, [{"body": f"to {name}"}])
            wait_until(partial(holds_one, cs, copy), f"{name} replicates")
        return {name: trigger(query(host, f"default/{name}")) for name in ("quick", "slow")}
    finally:
        stopped(host, thread)


def holds_one(connection_string: str, hub: str) -> bool:
    return delivered(connection_string, hub) == 1


def trigger(started: Any) -> str:
    """What Spark runs the query on (``ProcessingTimeTrigger(<ms>)``), read from its execution."""
    return str(started._jsq.streamingQuery().trigger().toString())


def test_a_member_without_an_interval_of_its_own_is_paced_and_one_with_it_keeps_it(
    spark: Any, emulator_factory: Any, tmp_path: Path
) -> None:
    assert triggers(spark, emulator_factory, tmp_path) == {
        "quick": f"ProcessingTimeTrigger({MEMBER_TRIGGER_MS})",
        "slow": "ProcessingTimeTrigger(1000)",
    }


def test_an_application_that_lifts_the_pace_starts_its_members_back_to_back(
    unpaced: Any, emulator_factory: Any, tmp_path: Path
) -> None:
    assert triggers(unpaced, emulator_factory, tmp_path) == {
        "quick": "ProcessingTimeTrigger(0)",
        "slow": "ProcessingTimeTrigger(1000)",
    }
