"""dedupe: drops a key let through less than windowSeconds earlier (by enqueue time), per source
partition, replay-safe, holding only one window of keys."""

from __future__ import annotations

import json

from editor_helpers import build, event, run_batch, task_config


def dedupe(tmp_path, **spec):
    return build({"dedupe": {"windowSeconds": 60, **spec}}, task_config(tmp_path))


def passed(results):
    return [r.body.decode() for r in results if r is not None]


def test_a_repeat_within_the_window_is_dropped_and_after_it_passes_again(tmp_path):
    editor = dedupe(tmp_path)
    events = [
        event("first", system={"message_id": "m1"}, at=0),
        event("repeat", system={"message_id": "m1"}, at=59),
        event("other", system={"message_id": "m2"}, at=59),
        event("after-window", system={"message_id": "m1"}, at=60),
        event("no-key", at=61),
        event("no-key-again", at=61),
    ]
    assert passed(run_batch(editor, events, batch=0, state_dir=tmp_path)) == [
        "first",
        "other",
        "after-window",
        "no-key",
        "no-key-again",
    ]


def test_the_key_can_be_a_body_path_or_a_property(tmp_path):
    by_body = dedupe(tmp_path, key="body.paymentId")
    events = [event(json.dumps({"paymentId": p}), at=i) for i, p in enumerate(["p1", "p2", "p1"])]
    assert passed(run_batch(by_body, events, batch=0, state_dir=tmp_path / "a")) == [
        '{"paymentId": "p1"}',
        '{"paymentId": "p2"}',
    ]
    by_property = dedupe(tmp_path, key="orderId")
    events = [event(str(i), properties={"orderId": "o"}, at=i) for i in range(3)]
    assert passed(run_batch(by_property, events, batch=0, state_dir=tmp_path / "b")) == ["0"]


def test_keys_are_remembered_across_batches_and_a_replay_decides_the_same(tmp_path):
    editor = dedupe(tmp_path)
    run_batch(editor, [event("a", system={"message_id": "m1"}, at=0)], batch=0, state_dir=tmp_path)
    second = [
        event("a-again", system={"message_id": "m1"}, at=10),
        event("b", system={"message_id": "m2"}, at=10),
    ]
    assert passed(run_batch(editor, second, batch=1, state_dir=tmp_path)) == ["b"]
    # Replaying batch 1 starts from batch 0's state, so m2 is not taken for a repeat of itself.
    assert passed(run_batch(editor, second, batch=1, state_dir=tmp_path)) == ["b"]


def test_source_partitions_are_deduplicated_separately(tmp_path):
    editor = dedupe(tmp_path)
    run_batch(editor, [event("p0", system={"message_id": "m"})], batch=0, state_dir=tmp_path, partition="0")
    assert passed(
        run_batch(
            editor, [event("p1", system={"message_id": "m"})], batch=0, state_dir=tmp_path, partition="1"
        )
    ) == ["p1"]


def test_state_holds_only_the_keys_of_one_window(tmp_path):
    editor = dedupe(tmp_path, windowSeconds=10)
    for batch in range(5):
        events = [
            event(str(i), system={"message_id": f"b{batch}-{i}"}, at=batch * 100 + i) for i in range(50)
        ]
        run_batch(editor, events, batch=batch, state_dir=tmp_path)
    [snapshot] = [p for p in (tmp_path / "editors" / "0-dedupe" / "0").glob("4.json")]
    kept = json.loads(snapshot.read_text())
    assert sorted(kept) == sorted(f"b4-{i}" for i in range(40, 50))
