"""The index of a target partition finds exactly where a consumer's source checkpoints put it: the last
event of the longest prefix whose copies the consumer processed — for copies of one source partition
(partition i → i), of several interleaved ones (a re-hashed mapping), with replayed copies and events
that are not copies at all — from its window, its samples plus a bounded read, or after a restart."""

from __future__ import annotations

import random

import pytest

from federator_spark.translation import index as index_module
from federator_spark.translation.index import PartitionIndex, Position, Refine, resolve


def exact(events, checkpoints):
    """The answer by definition: the last event of the longest processed prefix (start - 1 if none)."""
    answer = Position(-1, "-1")
    for sequence, offset, origin in events:
        if origin is None or origin[1] > checkpoints.get(origin[0], -1):
            break
        answer = Position(sequence, offset)
    return answer


def build(events):
    built = PartitionIndex("0", 0)
    for event in events:
        built.add(*event)
    return built


def translate(built, events, checkpoints):
    found = built.locate(checkpoints)
    if isinstance(found, Refine):
        return resolve(found, iter(events), checkpoints), True
    return found, False


def target_partition(origins):
    """Events of a target partition: sequence i, offset 100·i, the given origins."""
    return [(i, str(100 * i), origin) for i, origin in enumerate(origins)]


def test_one_source_partition_to_one_target_partition():
    events = target_partition([("0", s) for s in range(10)])
    built = build(events)
    assert built.locate({"0": 4}) == Position(4, "400")
    assert built.locate({"0": 9}) == Position(9, "900")
    assert built.locate({"0": 42}) == Position(9, "900")  # the consumer is ahead of the replication
    assert built.locate({}) == Position(-1, "-1")  # nothing processed: resume at the first event
    assert built.locate({"1": 99}) == Position(-1, "-1")  # other partitions' checkpoints do not count


def test_interleaved_source_partitions_stop_at_the_first_unprocessed_of_any():
    origins = [("0", 0), ("1", 0), ("0", 1), ("2", 0), ("1", 1), ("0", 2), ("2", 1)]
    built = build(target_partition(origins))
    # Partition 1 processed up to 0, so the copy of ("1", 1) at sequence 4 is the first not processed.
    assert built.locate({"0": 5, "1": 0, "2": 5}) == Position(3, "300")
    assert built.locate({"0": 0, "1": 5, "2": 5}) == Position(1, "100")
    assert built.locate({"0": 5, "1": 5}) == Position(2, "200")  # no checkpoint for partition 2


def test_a_replayed_copy_never_moves_the_checkpoint_past_an_unprocessed_event():
    # A replayed batch wrote 3..5 of partition 0 again after 6 had been written.
    origins = [("0", s) for s in [0, 1, 2, 3, 4, 5, 6, 3, 4, 5, 7]]
    built = build(target_partition(origins))
    assert built.locate({"0": 5}) == Position(5, "500")
    assert built.locate({"0": 6}) == Position(9, "900")


def test_events_that_are_not_copies_of_the_source_end_the_processed_prefix():
    origins = [("0", 0), ("0", 1), None, ("0", 2)]
    built = build(target_partition(origins))
    assert built.locate({"0": 10}) == Position(1, "100")


def test_beyond_the_window_the_samples_narrow_the_search_and_a_bounded_read_finishes_it(monkeypatch):
    monkeypatch.setattr(index_module, "SAMPLE_EVERY", 10)
    monkeypatch.setattr(index_module, "WINDOW_EVENTS", 15)
    events = target_partition([("0", s) for s in range(100)])
    built = build(events)
    found = built.locate({"0": 42})
    assert found == Refine(Position(39, "3900"), 49)  # between two samples: at most 10 events to read
    assert resolve(found, iter(events[40:]), {"0": 42}) == Position(42, "4200")
    assert built.locate({"0": 91}) == Position(91, "9100")  # inside the window: nothing to read


def test_randomised_mappings_replays_and_foreign_events_match_the_definition(monkeypatch):
    monkeypatch.setattr(index_module, "SAMPLE_EVERY", 7)
    monkeypatch.setattr(index_module, "MAX_SAMPLES", 8)
    monkeypatch.setattr(index_module, "WINDOW_EVENTS", 25)
    rng = random.Random(19)
    for _ in range(200):
        sources = [str(p) for p in range(rng.randint(1, 4))]
        nexts = dict.fromkeys(sources, 0)
        origins = []
        for _ in range(rng.randint(0, 300)):
            roll = rng.random()
            partition = rng.choice(sources)
            if roll < 0.02:
                origins.append(None)
            elif roll < 0.06 and nexts[partition] > 3:  # a replay of a few copies
                start = nexts[partition] - rng.randint(1, 3)
                origins.extend((partition, s) for s in range(start, nexts[partition]))
            else:
                origins.append((partition, nexts[partition]))
                nexts[partition] += 1
        events = target_partition(origins)
        built = build(events)
        assert len(built.samples) <= 8
        for _ in range(10):
            checkpoints = {p: rng.randint(-1, n + 1) for p, n in nexts.items() if rng.random() < 0.9}
            found, read = translate(built, events, checkpoints)
            assert found == exact(events, checkpoints), (origins, checkpoints)
            if not read:
                continue
            # A read covers at most the events between two samples.
            refine = built.locate(checkpoints)
            assert isinstance(refine, Refine)
            assert refine.until - refine.after.sequence <= 7 * 2 ** len(built.samples)


def test_an_index_restored_from_its_file_answers_alike_and_reads_only_between_samples(monkeypatch):
    monkeypatch.setattr(index_module, "SAMPLE_EVERY", 10)
    events = target_partition([(str(i % 2), i // 2) for i in range(220)])
    built = build(events[:200])
    restored = PartitionIndex.from_json(built.to_json())
    assert not restored.window
    for checkpoints in ({"0": 30, "1": 31}, {"0": 99, "1": 99}, {"0": 10, "1": 99}):
        assert translate(restored, events[:200], checkpoints)[0] == exact(events[:200], checkpoints)
    # New events after the restart fill the window again.
    for event in events[200:]:
        restored.add(*event)
    assert restored.locate({"0": 104, "1": 104}) == Position(209, "20900")


def test_retention_moves_the_first_position_a_consumer_can_resume_at():
    built = build(target_partition([("0", s) for s in range(10)]))
    built.expire(5)
    assert built.before_first == Position(4, "-1")
    assert built.start == 5


@pytest.mark.parametrize("count", [0, 1])
def test_an_empty_or_tiny_partition(count):
    events = target_partition([("0", 0)][:count])
    built = build(events)
    assert built.locate({"0": 0}) == exact(events, {"0": 0})
