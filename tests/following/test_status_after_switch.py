"""What a task's status says after a member switch, from the driver's status file to the ReplicationTask
status: the events a follower skipped because it had handled them on the other member and those a
replayed batch found written already (duplicates avoided, each counted once), and when the first batch
on the member it follows now completed (the moment it began flowing there, which the switch's timing
uses)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from federator_contract.api.replicationtask import ReplicationTaskStatus
from federator_contract.driverstatus import task_status_fields
from federator_spark import metrics

MEMBER_A, MEMBER_B = "/checkpoints/orders/members/weu", "/checkpoints/orders/members/neu"


def batch(following: int = 0, replayed: int = 0) -> dict[str, Any]:
    summary = metrics.summarize([], ["copy"])
    summary["dropped"]["following"] = following
    summary["replaySkipped"] = replayed
    return summary


def fold_at(
    monkeypatch: pytest.MonkeyPatch, status: Path, epoch: float, batch_id: int, query: str, **counts: int
) -> None:
    monkeypatch.setattr(time, "time", lambda: epoch)  # the fold's clock
    metrics.fold(
        str(status),
        task="orders",
        namespace="default",
        batch_id=batch_id,
        summary=batch(**counts),
        query=query,
    )


def status_of(status: Path) -> ReplicationTaskStatus:
    return ReplicationTaskStatus.model_validate(task_status_fields(metrics.driver_status(str(status))))


def test_the_first_batch_on_each_member_is_timed_and_the_skipped_events_are_counted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status = tmp_path / "status.json"
    fold_at(monkeypatch, status, 1_800_000_000, 0, MEMBER_A)
    fold_at(monkeypatch, status, 1_800_000_005, 1, MEMBER_A, replayed=3)
    found = status_of(status)
    assert found.first_batch_on_member_time is not None
    assert found.first_batch_on_member_time.timestamp() == 1_800_000_000  # not the later batch's
    assert (found.events_skipped_after_switch, found.events_found_written) == (0, 3)

    fold_at(monkeypatch, status, 1_800_000_042, 2, MEMBER_B, following=7)
    fold_at(monkeypatch, status, 1_800_000_050, 3, MEMBER_B, following=2)
    found = status_of(status)
    assert found.first_batch_on_member_time is not None
    assert found.first_batch_on_member_time.timestamp() == 1_800_000_042
    assert found.last_batch_time is not None and found.last_batch_time.timestamp() == 1_800_000_050
    assert (found.events_skipped_after_switch, found.events_found_written) == (9, 3)


def test_a_replay_counted_before_a_crash_is_not_a_new_first_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status = tmp_path / "status.json"
    fold_at(monkeypatch, status, 1_800_000_000, 4, MEMBER_A, replayed=2)
    fold_at(monkeypatch, status, 1_800_000_009, 4, MEMBER_A, replayed=2)  # the same batch, replayed
    found = status_of(status)
    assert found.first_batch_on_member_time is not None
    assert found.first_batch_on_member_time.timestamp() == 1_800_000_000
    assert found.events_found_written == 2


def test_a_driver_that_counts_nothing_of_the_kind_leaves_the_fields_out() -> None:
    fields = task_status_fields(
        {"targets": {"copy": {"eventsOut": 4}}, "lastBatchTime": "2026-11-29T15:00:00Z"}
    )
    assert not {"eventsSkippedAfterSwitch", "eventsFoundWritten", "firstBatchOnMemberTime"} & set(fields)
