"""A Service Bus source that follows a FailoverGroup shows its arrival on a member with a batch, even when
the member's entity is idle: the group times a follower's switch by its first batch on the new member, and
Spark makes no batch of its own for an idle source whose checkpoint already has one (a member the task
read before, as after a failover back to it). Real emulator; the driver-side state without Spark, each
``latest`` call being what Spark's ``latestOffset`` would make."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_servicebus_receive_ahead import eventually, spark_committed, spooled

from federator_contract.checkpoints import CheckpointLayout
from federator_emulator.server import RunningEmulator
from federator_spark.sources.servicebus_driver import SourceDriver
from federator_spark.sources.spool import Spool, read_spool_file


@pytest.fixture
def follower(driver: SourceDriver, tmp_path: Path) -> Iterator[Callable[[], SourceDriver]]:
    """Makes a run of the source on member ``secondary`` of a task that read that member before: its
    checkpoint there holds Spark's batch 0 (Spark's own first batch, made on a checkpoint without one)."""
    settings = dataclasses.replace(
        driver.settings, layout=CheckpointLayout.at(str(tmp_path / "task"), member="secondary")
    )
    spark_committed(settings.checkpoint, 0, 0)
    runs: list[SourceDriver] = []

    def start() -> SourceDriver:
        runs.append(SourceDriver(settings))
        return runs[-1]

    yield start
    for run in runs:
        run._stop_receiving_ahead()
        run._reset_receiver()


def spool_file_count(driver: SourceDriver, number: int) -> int:
    return sum(1 for _ in read_spool_file(Spool(driver.settings.spool_dir).path(number))[1])


def test_a_following_run_makes_one_empty_batch_on_an_idle_member_then_waits_for_messages(
    follower: Callable[[], SourceDriver], send: Callable[[range], None]
) -> None:
    run = follower()
    eventually(lambda: run.latest(0, 10) == 1)  # the first polls may end before the receiver's link opens
    assert spool_file_count(run, 1) == 0
    spark_committed(run.settings.checkpoint, 1, 1)
    assert run.latest(1, 10) == 1  # idle again: no batch
    send(range(1))
    eventually(lambda: run.latest(1, 10) == 2)
    assert spooled(run, 2) == [0]


def test_every_run_on_the_member_shows_itself_again(follower: Callable[[], SourceDriver]) -> None:
    first = follower()
    eventually(lambda: first.latest(0, 10) == 1)
    spark_committed(first.settings.checkpoint, 1, 1)
    second = follower()  # the task came back to the member, or its query restarted
    eventually(lambda: second.latest(1, 10) == 2)
    assert spool_file_count(second, 2) == 0


def test_a_member_that_does_not_answer_gets_no_batch_until_it_does(
    follower: Callable[[], SourceDriver], emulator: RunningEmulator
) -> None:
    namespace = emulator.namespace().name
    emulator.set_outage(namespace, True)
    run = follower()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert run.latest(0, 10) == 0
    emulator.set_outage(namespace, False)
    eventually(lambda: run.latest(0, 10) == 1, timeout=60)


def test_a_source_that_follows_no_group_makes_no_batch_of_an_idle_entity(driver: SourceDriver) -> None:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert driver.latest(0, 10) == 0
