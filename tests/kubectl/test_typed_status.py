"""The plugin reads status through the contract's models, and stays useful when a newer operator wrote it:
unknown fields are kept, and one field it cannot read hides only that field."""

from __future__ import annotations

from datetime import UTC, datetime

from federator.kubectl.model import group_status, lag_of, task_status

PROBE = {"member": "weu", "healthy": True, "consecutiveFailures": 0, "lastProbeTime": "2026-11-01T12:00:00Z"}


def test_a_field_a_newer_operator_added_is_kept() -> None:
    status = group_status({"status": {"producerMember": "weu", "switchHistory": [{"to": "weu"}]}})
    assert status.producer_member == "weu"
    assert status.model_extra == {"switchHistory": [{"to": "weu"}]}


def test_a_field_the_plugin_cannot_read_hides_only_that_field() -> None:
    status = group_status({"status": {"producerMember": "weu", "drainPending": "orders", "probes": [PROBE]}})
    assert (status.producer_member, status.drain_pending) == ("weu", [])
    assert status.probes[0].last_probe_time == datetime(2026, 11, 1, 12, tzinfo=UTC)


def test_an_object_without_status_reads_as_an_empty_status() -> None:
    assert task_status({"metadata": {"name": "t"}}).spark_application is None
    [whole] = lag_of({"metadata": {"name": "t"}})
    assert (whole.partition, whole.seconds_behind, whole.last_batch_time) == (None, None, None)


def test_lag_rows_print_as_the_status_names_them() -> None:
    task = {
        "status": {
            "eventsReplicated": 40,
            "lastBatchTime": "2026-11-01T12:00:00Z",
            "lag": {"partitions": [{"partition": "0", "eventsBehind": 3, "secondsBehind": 1.5}]},
        }
    }
    [row] = lag_of(task)
    assert row.to_dict() == {
        "partition": "0",
        "secondsBehind": 1.5,
        "eventsBehind": 3,
        "eventsReplicated": 40,
        "lastBatchTime": "2026-11-01T12:00:00Z",
    }
