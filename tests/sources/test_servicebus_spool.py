"""The Service Bus source's spool and ledger, without Spark or a broker: what the driver decides for a
received message, and what survives a crash at each step (a new Ledger is what a restarted driver
builds from the files)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from federator_spark.sources.servicebus_records import to_row
from federator_spark.sources.spool import (
    Disposition,
    Ledger,
    Spool,
    committed_position,
    read_spool_file,
)

SOURCE = "localhost:5672/orders"


def record(seq: int, body: bytes = b"x") -> dict[str, object]:
    import base64

    return {
        "sequence_number": seq,
        "body": base64.b64encode(body).decode(),
        "enqueued_time": 1_700_000_000.5,
        "partition_key": "alice",
        "properties": {"region": "eu"},
        "system_properties": {"message_id": f"m{seq}"},
    }


def spark_batch(checkpoint: Path, batch_id: int, spool_end: int, *, committed: bool) -> None:
    """What Spark's offset log and commit log hold for a batch (format of pyspark 4.3)."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (checkpoint / "offsets" / str(batch_id)).write_text(
        f"v1\n{json.dumps(metadata)}\n{json.dumps({'spool': spool_end})}"
    )
    if committed:
        (checkpoint / "commits" / str(batch_id)).write_text('v1\n{"nextBatchWatermarkMs":0}')


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return tmp_path / "checkpoint"


@pytest.fixture
def spool(checkpoint: Path) -> Spool:
    return Spool(checkpoint / "federator" / "servicebus")


def test_committed_position_is_the_end_offset_of_the_newest_committed_batch(checkpoint):
    assert committed_position(checkpoint) == 0
    spark_batch(checkpoint, 0, 1, committed=True)
    spark_batch(checkpoint, 1, 2, committed=True)
    spark_batch(checkpoint, 2, 3, committed=False)  # in flight: logged, not committed
    (checkpoint / "commits" / ".2.3f2a.tmp").write_text("partial")  # Spark's temporary file

    assert committed_position(checkpoint) == 2


def test_committed_position_refuses_a_checkpoint_of_another_source(checkpoint):
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "offsets" / "0").write_text('v1\n{}\n{"0": 41, "1": 7}')
    (checkpoint / "commits" / "0").write_text("v1\n{}")

    with pytest.raises(ValueError, match="belongs to another query"):
        committed_position(checkpoint)


def test_a_spool_file_reads_back_in_order_and_leaves_no_temporary_file(spool):
    spool.write(1, SOURCE, [record(7, b"first"), record(9, b"second")])

    source, records = read_spool_file(spool.path(1))
    assert source == SOURCE
    assert [r["sequence_number"] for r in records] == [7, 9]
    assert sorted(p.name for p in spool.directory.iterdir()) == ["1.jsonl"]


def test_a_missing_spool_file_says_the_checkpoint_must_be_shared(spool):
    with pytest.raises(FileNotFoundError, match="shared by the driver and the executors"):
        read_spool_file(spool.path(3))


def test_a_spool_record_becomes_a_row_of_the_event_schema():
    row = to_row(record(12, b'{"a": 1}'), SOURCE)

    assert row == (
        b'{"a": 1}',
        SOURCE,
        "0",
        1,
        12,
        "12",
        datetime.fromtimestamp(1_700_000_000.5, UTC),
        "alice",
        {"region": "eu"},
        {"message_id": "m12"},
        {},  # no property types: spooled by a version that did not keep them, its values stay text
    )


def test_received_messages_are_new_until_spooled_then_held_until_committed_then_completed(spool):
    ledger = Ledger(spool)
    assert ledger.classify(5) is Disposition.NEW

    ledger.append(1, SOURCE, [record(5), record(6)])
    assert ledger.classify(5) is Disposition.HOLD

    moved = ledger.fold(committed=1)
    assert sorted(moved) == [5, 6]
    assert ledger.classify(5) is Disposition.COMPLETE
    assert spool.numbers() == []  # a committed file is no longer needed for replay

    ledger.completed([5])
    assert ledger.classify(5) is Disposition.NEW
    assert ledger.classify(6) is Disposition.COMPLETE


def test_fold_leaves_uncommitted_files_alone(spool):
    ledger = Ledger(spool)
    ledger.append(1, SOURCE, [record(1)])
    ledger.append(2, SOURCE, [record(2)])

    ledger.fold(committed=1)

    assert spool.numbers() == [2]
    assert ledger.classify(2) is Disposition.HOLD


def test_crash_after_persist_before_spark_logged_the_batch(spool):
    Ledger(spool).append(4, SOURCE, [record(40), record(41)])

    restarted = Ledger(spool)  # Spark restarts from offset 3: file 4 is the next batch, as it was

    assert restarted.pending_after(3) == [4]
    assert restarted.classify(40) is Disposition.HOLD  # its redelivery is not spooled twice


def test_crash_after_the_batch_committed_before_completion(spool, checkpoint):
    Ledger(spool).append(1, SOURCE, [record(10), record(11)])
    spark_batch(checkpoint, 0, 1, committed=True)

    restarted = Ledger(spool)
    restarted.fold(committed_position(checkpoint))

    assert restarted.classify(10) is Disposition.COMPLETE  # completed as soon as it is redelivered
    assert Ledger(spool).classify(11) is Disposition.COMPLETE  # and that survives another crash


def test_crash_between_recording_completions_and_removing_the_file(spool):
    ledger = Ledger(spool)
    ledger.append(1, SOURCE, [record(10)])
    spool.save_completing([10])  # fold's first step happened, the file removal did not

    restarted = Ledger(spool)
    restarted.fold(committed=1)

    assert restarted.classify(10) is Disposition.COMPLETE
    assert spool.numbers() == []
    assert spool.load_completing() == [10]


def test_confirmed_completions_are_forgotten_on_disk(spool):
    ledger = Ledger(spool)
    ledger.append(1, SOURCE, [record(1), record(2)])
    ledger.fold(committed=1)

    ledger.completed([1, 2])

    assert spool.load_completing() == []
    assert Ledger(spool).classify(1) is Disposition.NEW


def test_expected_completions_are_pruned_once_they_had_time_to_come_back(spool):
    now = [100.0]
    ledger = Ledger(spool, clock=lambda: now[0])
    ledger.append(1, SOURCE, [record(1)])
    ledger.fold(committed=1)
    now[0] = 130.0
    ledger.append(2, SOURCE, [record(2)])
    ledger.fold(committed=2)

    assert ledger.prune(expected_by=120.0) == [1]

    assert ledger.classify(1) is Disposition.NEW
    assert ledger.classify(2) is Disposition.COMPLETE
    assert spool.load_completing() == [2]


def test_the_newest_claim_owns_the_source(spool):
    spool.claim("run-a")
    spool.claim("run-b")

    assert spool.owner() == "run-b"
