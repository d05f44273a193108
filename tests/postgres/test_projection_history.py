"""History mode: one row per event, keyed by its source identity, so a replayed batch adds nothing."""

from __future__ import annotations

import json

from projection_helpers import SOURCE, T0, TASK, event, publish, rows, target


def test_each_event_becomes_one_row_with_its_source_identity_and_content(uri):
    plan = target("readings", "history")
    publish(
        plan,
        [
            event(0, key="dev-1", properties={"unit": "C", "repl-sequence": "0"}),
            event(1, key="dev-2", body=b"plain text, not JSON"),
            event(2),
        ],
    )

    found = rows(uri, "SELECT * FROM readings ORDER BY sequence_number")
    assert [r["sequence_number"] for r in found] == [0, 1, 2]
    first = found[0]
    assert (first["source"], first["partition"], first["source_offset"]) == (SOURCE, "0", "0")
    assert first["partition_key"] == "dev-1"
    assert first["enqueued_time"] == T0
    assert bytes(first["body"]) == b'{"reading": 0}'
    assert first["body_json"] == {"reading": 0}
    assert first["properties"] == {"unit": "C", "repl-sequence": "0"}
    assert first["system_properties"] == {"content_type": "application/json"}
    assert first["task"] == TASK
    assert first["replicated_at"] is not None
    assert bytes(found[1]["body"]) == b"plain text, not JSON"
    assert found[1]["body_json"] is None
    assert found[2]["partition_key"] is None  # keyless events keep a null key in history


def test_a_replayed_batch_inserts_nothing_twice(uri):
    plan = target("readings", "history")
    batch = [event(s, partition=p, key=f"dev-{s % 2}") for p in ("0", "1") for s in range(5)]
    publish(plan, batch)
    replicated_at = rows(uri, "SELECT max(replicated_at) AS t FROM readings")[0]["t"]

    publish(plan, [*batch[3:], event(5, partition="0")])  # a replay overlapping a new event

    found = rows(uri, "SELECT partition, sequence_number, replicated_at FROM readings")
    assert len(found) == 11
    assert sorted((r["partition"], r["sequence_number"]) for r in found) == sorted(
        [(p, s) for p in ("0", "1") for s in range(5)] + [("0", 5)]
    )
    assert [r for r in found if r["replicated_at"] > replicated_at] == [
        r for r in found if (r["partition"], r["sequence_number"]) == ("0", 5)
    ]


def test_a_duplicate_inside_one_batch_is_written_once(uri):
    publish(target("readings", "history"), [event(7), event(7), event(8)])

    assert rows(uri, "SELECT count(*) AS n FROM readings")[0]["n"] == 2


def test_events_of_two_sources_with_the_same_position_are_distinct_rows(uri):
    plan = target("readings", "history")
    publish(plan, [event(0, source="a.example/hub"), event(0, source="b.example/hub")])

    assert [r["source"] for r in rows(uri, "SELECT source FROM readings ORDER BY source")] == [
        "a.example/hub",
        "b.example/hub",
    ]


def test_a_large_batch_is_written_in_several_transactions_without_losing_events(uri):
    batch = [event(s, key=f"dev-{s % 10}", properties={"n": json.dumps(s)}) for s in range(12_000)]

    publish(target("readings", "history"), batch)

    summary = rows(uri, "SELECT count(*) AS n, max(sequence_number) AS last FROM readings")[0]
    assert (summary["n"], summary["last"]) == (12_000, 11_999)
