"""Compacted mode: one row per partition key holding its newest event; a replay never moves a row
backwards."""

from __future__ import annotations

from datetime import timedelta

from projection_helpers import SOURCE, T0, event, publish, rows, target

LATEST = "SELECT key, partition_key, partition, sequence_number, body_json FROM latest ORDER BY key"


def latest(uri):
    return {r["key"]: r for r in rows(uri, LATEST)}


def test_keeps_the_newest_event_per_partition_key(uri):
    publish(
        target("latest", "compacted"),
        [event(0, key="dev-1"), event(1, key="dev-2"), event(2, key="dev-1"), event(3, key="dev-1")],
    )

    found = latest(uri)
    assert list(found) == ["dev-1", "dev-2"]
    assert found["dev-1"]["sequence_number"] == 3
    assert found["dev-1"]["body_json"] == {"reading": 3}
    assert found["dev-2"]["sequence_number"] == 1


def test_a_replay_of_older_events_does_not_move_a_row_backwards(uri):
    plan = target("latest", "compacted")
    publish(plan, [event(s, key="dev-1") for s in range(3)])
    publish(plan, [event(s, key="dev-1") for s in range(5)])

    publish(plan, [event(s, key="dev-1") for s in range(2)])  # replay of an old batch

    assert latest(uri)["dev-1"]["sequence_number"] == 4


def test_within_a_source_partition_the_sequence_number_decides_even_if_the_clock_went_back(uri):
    plan = target("latest", "compacted")
    publish(plan, [event(1, key="dev-1")])

    publish(plan, [event(2, key="dev-1", enqueued=T0 - timedelta(hours=1))])

    assert latest(uri)["dev-1"]["sequence_number"] == 2


def test_across_source_partitions_the_later_enqueue_time_wins(uri):
    plan = target("latest", "compacted")
    # The key moved from partition 0 to partition 1 (e.g. the hub was re-partitioned).
    publish(plan, [event(50, key="dev-1", partition="0")])
    publish(plan, [event(3, key="dev-1", partition="1", enqueued=T0 + timedelta(seconds=60))])
    assert (latest(uri)["dev-1"]["partition"], latest(uri)["dev-1"]["sequence_number"]) == ("1", 3)

    publish(plan, [event(49, key="dev-1", partition="0")])  # a late replay from the old partition

    assert (latest(uri)["dev-1"]["partition"], latest(uri)["dev-1"]["sequence_number"]) == ("1", 3)


def test_one_batch_mixing_partitions_keeps_the_newest_per_key(uri):
    publish(
        target("latest", "compacted"),
        [
            event(9, key="dev-1", partition="0"),
            event(2, key="dev-1", partition="1", enqueued=T0 + timedelta(seconds=30)),
            event(1, key="dev-1", partition="1", enqueued=T0 + timedelta(seconds=20)),
        ],
    )

    assert (latest(uri)["dev-1"]["partition"], latest(uri)["dev-1"]["sequence_number"]) == ("1", 2)


def test_keyless_events_are_compacted_per_source_partition(uri):
    publish(
        target("latest", "compacted"),
        [event(0, partition="0"), event(1, partition="0"), event(0, partition="1"), event(2, key="0")],
    )

    found = latest(uri)
    assert set(found) == {f"{SOURCE}/0", f"{SOURCE}/1", "0"}
    assert found[f"{SOURCE}/0"]["sequence_number"] == 1
    assert found[f"{SOURCE}/0"]["partition_key"] is None
    assert found["0"]["partition_key"] == "0"  # a real key "0" does not collide with partition 0
