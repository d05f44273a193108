"""Commit records stay bounded however long a task runs: the driver's commit writes batch N's record
naming the oldest record still needed, removes the older ones, and finds the record before N by its
name, never by listing the folder; start-up removes what a crash (or an older version) left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from federator_spark.commits import RETAIN_FROM, CommitLog
from federator_spark.metrics import read_status
from federator_spark.plan import WritePlan
from federator_spark.routing import Router
from federator_spark.sinks.replication import ReplicationWriter, TaskReport, TaskReports


def writer(tmp_path: Path, retain_batches: int) -> ReplicationWriter:
    plan = WritePlan(
        task="t",
        namespace="ns",
        targets={},
        router=Router((), has_unrouted=False),
        effectively_once=True,
        state_dir=str(tmp_path / "state"),
        status_file=str(tmp_path / "status.json"),
        retain_batches=retain_batches,
    )
    return ReplicationWriter(plan)


def commit(sink: ReplicationWriter, batch_id: int) -> None:
    sink.commit([TaskReports([TaskReport(source_partition="0", events_in=2)])], batch_id)


def test_a_long_run_keeps_as_many_records_as_spark_keeps_batches(tmp_path: Path) -> None:
    sink = writer(tmp_path, retain_batches=5)
    for batch_id in range(200):
        commit(sink, batch_id)

    log = CommitLog(str(tmp_path / "state"))
    assert sorted(log.batches()) == [195, 196, 197, 198, 199]
    assert log.read(199)[RETAIN_FROM] == 195
    assert read_status(str(tmp_path / "status.json"))["eventsIn"] == 400  # every batch counted once


def test_the_record_before_a_batch_is_read_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = writer(tmp_path, retain_batches=5)
    commit(sink, 0)

    def listing(_log: CommitLog) -> list[int]:
        raise AssertionError("a batch listed the commit records")

    monkeypatch.setattr(CommitLog, "batches", listing)
    for batch_id in range(1, 20):
        commit(sink, batch_id)
    assert CommitLog(str(tmp_path / "state")).latest_before(19)["batchId"] == 18


def test_start_up_removes_the_records_a_crash_or_an_older_version_left(tmp_path: Path) -> None:
    log = CommitLog(str(tmp_path / "state"))
    for batch_id in range(10):  # an older version: no retainFrom, nothing pruned
        log.write(batch_id, {"summary": {}})
    assert log.tidy(retain_batches=3) == 7 and sorted(log.batches()) == [7, 8, 9]

    log.write(10, {"summary": {}, RETAIN_FROM: 9})  # a crash between record 10 and its pruning
    assert log.tidy(retain_batches=3) == 2 and sorted(log.batches()) == [9, 10]
