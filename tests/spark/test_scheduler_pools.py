"""A shared application's members run their batches in one of two scheduler pools: ``members`` while they
keep up, ``catching-up`` while their batches come full (``federator_spark.pools``). The allocation file
gives the members' pool a minimum share no application reaches, so Spark's FAIR scheduler serves it
before the catching-up pool whatever either runs and whatever the tasks are named. No JVM here:
``tests/spark/test_submitted_scheduler_mode.py`` has Spark read the file, and
``tests/spark/test_fleet_queries.py`` runs the switch in a host."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from test_member_batches import HUB, QUEUE, plan

from federator_spark.pools import (
    CATCHING_UP_POOL,
    MEMBERS_MIN_SHARE,
    MEMBERS_POOL,
    POOL_PROPERTY,
    batch_limit,
    catching_up,
    events_between,
    keep_pool,
    pool,
    write_allocation,
)
from federator_spark.scheduling import bounded


class Query:
    """What ``keep_pool`` reaches of a running query through py4j: its last progress (a batch of ``rows``
    events from partition 0, None before its first trigger) and its session's settings (what was set, in
    order)."""

    def __init__(self, rows: int | None) -> None:
        self.rows, self.set = rows, list[tuple[str, str]]()
        conf = SimpleNamespace(set=lambda key, value: self.set.append((key, value)))
        session = SimpleNamespace(conf=lambda: conf)
        execution = SimpleNamespace(sparkSessionForStream=lambda: session)
        self._jsq = SimpleNamespace(streamingQuery=lambda: execution, lastProgress=self.progress)

    def progress(self) -> Any:
        if self.rows is None:
            return None
        start, end = json.dumps({"0": 99}), json.dumps({"0": 99 + self.rows})
        source = SimpleNamespace(startOffset=lambda: start, endOffset=lambda: end)
        return SimpleNamespace(sources=lambda: [source])


def pools_in(path: Path) -> dict[str, dict[str, str]]:
    """Each pool of an allocation file, by name: its settings, as Spark's ``FairSchedulableBuilder`` reads
    them."""
    return {
        element.attrib["name"]: {setting.tag: (setting.text or "").strip() for setting in element}
        for element in ET.parse(path).getroot().iter("pool")
    }


def test_the_allocation_file_serves_the_members_pool_first_and_each_pool_in_submission_order(
    tmp_path: Path,
) -> None:
    pools = pools_in(write_allocation(tmp_path))
    assert pools == {
        MEMBERS_POOL: {"schedulingMode": "FIFO", "weight": "1", "minShare": str(MEMBERS_MIN_SHARE)},
        CATCHING_UP_POOL: {"schedulingMode": "FIFO", "weight": "1", "minShare": "0"},
    }


def test_a_member_runs_in_the_members_pool_unless_it_catches_up() -> None:
    assert (pool(catching_up=False), pool(catching_up=True)) == (MEMBERS_POOL, CATCHING_UP_POOL)


def test_a_member_catches_up_while_its_last_batch_read_as_many_events_as_its_limit() -> None:
    assert catching_up(1000, 1000)
    assert not catching_up(999, 1000)
    assert not catching_up(0, 1000)  # a trigger that found nothing new


def test_a_batch_read_the_events_between_its_offsets_in_every_partition() -> None:
    assert events_between({"0": 99, "1": 5}, {"0": 349, "1": 5}) == 250
    assert events_between({}, {"0": 249, "1": 249, "2": 249, "3": 249}) == 1000  # -1: none read before
    assert events_between({"0": 7}, {"0": 7, "1": 2}) == 3  # a partition new since the batch before


def test_a_member_without_a_batch_or_without_a_limit_is_not_catching_up() -> None:
    assert not catching_up(None, 1000)
    assert not catching_up(50_000, None)


def test_the_limit_is_the_bound_of_a_members_event_hub_batches_and_none_for_a_queue(tmp_path: Path) -> None:
    assert batch_limit(bounded(plan(tmp_path / "hub", HUB), 1000)) == 1000
    assert batch_limit(plan(tmp_path / "alone", HUB)) is None  # a task alone reads what is there
    assert batch_limit(bounded(plan(tmp_path / "queue", QUEUE), 1000)) is None


def test_a_member_moves_to_the_catching_up_pool_once_and_back_once_caught_up() -> None:
    query = Query(rows=None)
    assert keep_pool("shop/orders", query, 1000, behind=False) is False
    query.rows = 1000
    assert keep_pool("shop/orders", query, 1000, behind=False) is True
    assert keep_pool("shop/orders", query, 1000, behind=True) is True  # no setting again while behind
    query.rows = 12
    assert keep_pool("shop/orders", query, 1000, behind=True) is False
    assert query.set == [(POOL_PROPERTY, CATCHING_UP_POOL), (POOL_PROPERTY, MEMBERS_POOL)]


def test_a_query_that_cannot_be_asked_keeps_its_pool_until_the_next_pass() -> None:
    def stopped() -> Any:
        raise RuntimeError("the query stopped")

    query = Query(rows=1000)
    query._jsq.lastProgress = stopped
    assert keep_pool("shop/orders", query, 1000, behind=False) is False
    assert query.set == []
