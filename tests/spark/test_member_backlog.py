"""A member of a shared application catches up a backlog in batches of at most the application's bound
on a member's events per batch (``spark.federator.member.maxEventsPerTrigger``), against the emulator in
the shared local[2] session: the driver (``Host``) starts its query bounded, so that no batch of it holds
the task slots for the whole backlog."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import send
from test_fleet_queries import config, delivered, hubs, place, query, wait_until
from test_shared_driver import running, stopped

from federator_spark.fleet import ConfigReader
from federator_spark.host import Host
from federator_spark.scheduling import MEMBER_EVENTS_SETTING

pytestmark = pytest.mark.slow

BOUND, BACKLOG = 10, 35


@pytest.fixture
def bounded_members(spark: Any) -> Iterator[Any]:
    """The session with a bound of ``BOUND`` events, as an application's ``sparkConf`` would set it."""
    spark.conf.set(MEMBER_EVENTS_SETTING, str(BOUND))
    try:
        yield spark
    finally:
        spark.conf.unset(MEMBER_EVENTS_SETTING)


def test_a_member_catches_up_its_backlog_in_batches_of_at_most_the_bound(
    bounded_members: Any, emulator_factory: Any, tmp_path: Path
) -> None:
    emulator = emulator_factory(hubs("backlog", "backlog-copy"))
    cs = emulator.connection_string("ns1")
    send(cs, "backlog", [{"body": f"event {i}"} for i in range(BACKLOG)])
    directory = tmp_path / "tasks"
    directory.mkdir()

    host, thread = running(bounded_members, ConfigReader([directory]))
    try:
        task = config(tmp_path, emulator, "backlog", "backlog", triggerIntervalSeconds=0)
        place(directory, "backlog.json", task)
        wait_until(lambda: delivered(cs, "backlog-copy") == BACKLOG, "the backlog is replicated")
        # A batch's progress comes once it is committed, after its events are at the target.
        wait_until(lambda: sum(batches(host)) == BACKLOG, "every batch that read the backlog is committed")
        sizes = batches(host)
    finally:
        stopped(host, thread)

    assert sizes == [BOUND, BOUND, BOUND, BACKLOG - 3 * BOUND]  # all there from the start: full batches


def batches(host: Host) -> list[int]:
    """How many events each batch of the member's query read (batches that read none left out)."""
    found = query(host, "default/backlog")
    read = [events_read(progress) for progress in found.recentProgress] if found is not None else []
    return [events for events in read if events]


def events_read(progress: dict[str, Any]) -> int:
    """The events a batch read: its source's end offsets less its start offsets (sequence numbers per
    partition; a row of the source is a slice of them, not an event)."""
    [source] = progress["sources"]
    start, end = (offsets(source[key]) for key in ("startOffset", "endOffset"))
    return sum(last - start.get(partition, -1) for partition, last in end.items())


def offsets(value: Any) -> dict[str, int]:
    """A source's offsets as the progress shows them: JSON, parsed or not (none before the first batch)."""
    parsed = json.loads(value) if isinstance(value, str) else value
    return {str(partition): int(number) for partition, number in (parsed or {}).items()}
