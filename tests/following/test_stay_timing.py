"""When a follower began flowing on a member is timed per stay there: a stay on another member without
a batch (the member was down, or idle) between two stays on the same member does not leave the first
stay's time standing, and a source that finds its member with nothing new at the start of a stay is timed
as flowing then (an event hub makes no batch on a checkpoint that has one)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest
from following_helpers import write_plan

from federator_spark import following, metrics
from federator_spark.plan import WritePlan

T0 = 1_800_000_000.0


def at(monkeypatch: pytest.MonkeyPatch, epoch: float) -> None:
    monkeypatch.setattr(time, "time", lambda: epoch)  # the clock of the switch and of the fold


def start(monkeypatch: pytest.MonkeyPatch, plan: WritePlan, epoch: float) -> None:
    """The driver starts the task's query on ``plan``'s member at ``epoch``."""
    assert plan.following is not None
    at(monkeypatch, epoch)
    following.prepare(plan.following)


def batch(monkeypatch: pytest.MonkeyPatch, plan: WritePlan, epoch: float, batch_id: int) -> None:
    assert plan.status_file is not None
    at(monkeypatch, epoch)
    summary = metrics.summarize([], ["copy"])
    metrics.fold(
        plan.status_file,
        task="orders",
        namespace="default",
        batch_id=batch_id,
        summary=summary,
        query=plan.state_dir,
    )


def visit(monkeypatch: pytest.MonkeyPatch, plan: WritePlan, epoch: float, batch_id: int) -> None:
    """A stay on ``plan``'s member from ``epoch``, with batch ``batch_id`` a second later."""
    start(monkeypatch, plan, epoch)
    batch(monkeypatch, plan, epoch + 1, batch_id)


def stayed(monkeypatch: pytest.MonkeyPatch, *plans: WritePlan) -> None:
    """Stays on each plan's member in turn from T0, 10 s apart, each with its first batch."""
    for number, plan in enumerate(plans):
        visit(monkeypatch, plan, T0 + 10 * number, 0)


def first_batch(plan: WritePlan) -> float:
    assert plan.status_file is not None
    moment = metrics.read_status(plan.status_file)["firstBatchOnMemberTime"]
    return datetime.fromisoformat(moment).timestamp()


def test_a_stay_without_a_batch_in_between_does_not_leave_the_earlier_stays_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    primary, secondary = write_plan(tmp_path, "weu"), write_plan(tmp_path, "neu")
    stayed(monkeypatch, primary, secondary)
    assert first_batch(secondary) == T0 + 11

    start(monkeypatch, primary, T0 + 20)  # the primary is down: no batch there
    start(monkeypatch, secondary, T0 + 30)
    batch(monkeypatch, secondary, T0 + 32, 1)
    batch(monkeypatch, secondary, T0 + 33, 2)

    assert first_batch(secondary) == T0 + 32


def test_a_restart_on_the_same_member_is_not_a_new_stay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    primary = write_plan(tmp_path, "weu")
    visit(monkeypatch, primary, T0, 0)
    start(monkeypatch, primary, T0 + 10)  # the application restarted
    batch(monkeypatch, primary, T0 + 12, 1)

    assert first_batch(primary) == T0 + 1


def test_a_member_with_nothing_new_is_flowing_once_its_source_first_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    primary, secondary = write_plan(tmp_path, "weu"), write_plan(tmp_path, "neu")
    stayed(monkeypatch, secondary, primary)
    start(monkeypatch, secondary, T0 + 20)  # back to a member whose checkpoint has a batch: idle

    assert secondary.status_file is not None
    at(monkeypatch, T0 + 21)
    metrics.arrived(secondary.status_file)
    assert first_batch(secondary) == T0 + 21

    batch(monkeypatch, secondary, T0 + 40, 1)  # the stay's later batches are not its first
    at(monkeypatch, T0 + 45)
    metrics.arrived(secondary.status_file)  # a later run's answer on the same stay
    assert first_batch(secondary) == T0 + 21


def test_an_answer_outside_a_switch_changes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    primary = write_plan(tmp_path, "weu")
    visit(monkeypatch, primary, T0, 0)
    assert primary.status_file is not None
    at(monkeypatch, T0 + 5)
    metrics.arrived(primary.status_file)

    assert first_batch(primary) == T0 + 1
