"""chain: h_n = sha256(h_{n-1} || body) per partition-key stream, replay-safe per source partition."""

from __future__ import annotations

import hashlib

import pytest
from editor_helpers import apply, build, event, open_step, run_batch, task_config


@pytest.fixture
def editor(tmp_path):
    return build({"chain": {}}, task_config(tmp_path))


def expected_chain(bodies, start=b""):
    head, values = start, []
    for body in bodies:
        head = hashlib.sha256(head + body).digest()
        values.append(head.hex())
    return values


def chained(results):
    return [r.properties["repl-chain"] for r in results]


def test_each_partition_key_and_the_keyless_events_form_their_own_stream(editor, tmp_path):
    events = [event(f"e{i}", key=["a", "b", None][i % 3], sequence=i) for i in range(9)]
    results = run_batch(editor, events, batch=0, state_dir=tmp_path)
    for key in ["a", "b", None]:
        stream = [(e, r) for e, r in zip(events, results, strict=True) if e.partition_key == key]
        assert chained(r for _, r in stream) == expected_chain([e.body for e, _ in stream])
    assert expected_chain([b"e0"])[0] == hashlib.sha256(b"e0").hexdigest()


def test_the_chain_continues_across_batches_and_a_replayed_batch_gets_the_same_values(editor, tmp_path):
    first = run_batch(editor, [event("a0", key="k"), event("a1", key="k")], batch=0, state_dir=tmp_path)
    second = run_batch(editor, [event("a2", key="k"), event("a3", key="k")], batch=1, state_dir=tmp_path)
    assert chained(first + second) == expected_chain([b"a0", b"a1", b"a2", b"a3"])
    # Batch 1 failed elsewhere after this task saved its state: Spark replays it, maybe with a new task.
    replayed = run_batch(editor, [event("a2", key="k"), event("a3", key="k")], batch=1, state_dir=tmp_path)
    assert chained(replayed) == chained(second)
    third = run_batch(editor, [event("a4", key="k")], batch=2, state_dir=tmp_path)
    assert chained(third) == expected_chain([b"a0", b"a1", b"a2", b"a3", b"a4"])[-1:]


def test_a_task_that_never_finished_publishing_leaves_no_state_behind(editor, tmp_path):
    step, _scope = open_step(editor, batch=0, state_dir=tmp_path)
    apply(step, event("lost", key="k"))  # the task fails before publishing: scope.published() never runs
    retried = run_batch(editor, [event("lost", key="k")], batch=0, state_dir=tmp_path)
    assert chained(retried) == expected_chain([b"lost"])


def test_source_partitions_keep_separate_state_and_old_snapshots_are_removed(editor, tmp_path):
    for batch in range(4):
        run_batch(editor, [event(f"p0-{batch}", key="k")], batch=batch, state_dir=tmp_path, partition="0")
    run_batch(editor, [event("p1-0", key="k")], batch=3, state_dir=tmp_path, partition="1")
    state = tmp_path / "editors" / "0-chain"
    assert sorted(p.name for p in (state / "0").iterdir()) == ["2.json", "3.json"]
    assert sorted(p.name for p in (state / "1").iterdir()) == ["3.json"]
    [p1] = run_batch(editor, [event("p1-1", key="k")], batch=4, state_dir=tmp_path, partition="1")
    assert p1.properties["repl-chain"] == expected_chain([b"p1-0", b"p1-1"])[-1]


def test_a_consumer_detects_a_missing_event_by_recomputing_the_chain(editor, tmp_path):
    results = run_batch(editor, [event(f"e{i}", key="k") for i in range(4)], batch=0, state_dir=tmp_path)
    received = [results[0], results[1], results[3]]  # e2 went missing on the way

    def gaps(events):
        last, found = None, []
        for item in events:
            value = item.properties["repl-chain"]
            if last is not None and hashlib.sha256(bytes.fromhex(last) + item.body).hexdigest() != value:
                found.append(item.body)
            last = value
        return found

    assert gaps(results) == []
    assert gaps(received) == [b"e3"]
