"""A follower's first batch on a member, aborted by a switch before it was committed, keeps the start it
was planned from: Spark asks for the start again each time the query starts until a batch is committed,
to run that batch again with the end it logged. A start carried by a later switch lay past that end, so
the batch, replayed on the follower's return, read nothing: under load a run lost the 82 events of the
primary's first batch (its offset log: batch 0 ends at 18, 18, 18, 24; asked again on the return, the
start was 2706, 2705, 2705, 2705)."""

from __future__ import annotations

import sys
from pathlib import Path

from support.resources import ROOT

sys.path.insert(0, str(ROOT / "tests" / "following"))  # the following unit tests' helpers
from following_helpers import commit, event, follower, write_plan

from federator_spark.following import prepare


def plan_batch(tmp_path: Path, member: str, batch: int) -> None:
    """Spark's offset log naming ``batch`` on ``member``'s checkpoint: planned, not committed."""
    offsets = tmp_path / "checkpoint" / "members" / member / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    (offsets / str(batch)).write_text('v1\n{}\n{"0": 18}\n')


def handle_on(tmp_path: Path, member: str, at: float, batch: int = 0) -> None:
    """Batch ``batch`` on ``member`` committed, having handled its event ``batch``, enqueued ``at`` seconds
    after T0."""
    plan = write_plan(tmp_path, member)
    task = follower(plan, member, batch=batch)
    assert task.admit(event(member, batch, at=at))
    commit(plan, batch, task)


def test_a_first_batch_aborted_by_a_switch_starts_where_it_was_planned_on_the_return(tmp_path: Path) -> None:
    assert prepare(write_plan(tmp_path, "weu").following) is None  # the spec's start
    plan_batch(tmp_path, "weu", 0)  # weu's first batch, still running at the switch
    assert prepare(write_plan(tmp_path, "neu").following) is None  # nothing handled on weu to resume from
    handle_on(tmp_path, "neu", at=100)

    assert prepare(write_plan(tmp_path, "weu").following) is None  # not neu's resume time


def test_a_member_first_started_from_a_carried_time_keeps_that_time_until_a_batch_is_committed(
    tmp_path: Path,
) -> None:
    prepare(write_plan(tmp_path, "weu").following)
    handle_on(tmp_path, "weu", at=100)
    first = prepare(write_plan(tmp_path, "neu").following)
    assert first is not None
    plan_batch(tmp_path, "neu", 0)  # aborted by the switch back
    prepare(write_plan(tmp_path, "weu").following)
    handle_on(tmp_path, "weu", at=500, batch=1)  # weu handles more: the time carried to neu moves on

    assert prepare(write_plan(tmp_path, "neu").following) == first


def test_a_member_with_no_batch_planned_starts_from_the_time_carried_now(tmp_path: Path) -> None:
    prepare(write_plan(tmp_path, "weu").following)
    handle_on(tmp_path, "weu", at=100)
    first = prepare(write_plan(tmp_path, "neu").following)  # neu's query stopped before it planned a batch
    prepare(write_plan(tmp_path, "weu").following)
    handle_on(tmp_path, "weu", at=500, batch=1)

    again = prepare(write_plan(tmp_path, "neu").following)
    assert first is not None and again is not None and again > first
