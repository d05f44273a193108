"""Where a consumer's source checkpoints put it in one target partition: a bounded index of the target
partition, and the search over it.

Every event the task copied carries its origin in ``repl-source-id`` (source partition P, sequence s).
A consumer that checkpointed sequence c_P in every source partition P has processed a copy in the
target exactly when s <= c_P. The **translated checkpoint** of a target partition is the last event of
its longest processed prefix: the consumer resumes right after it, at the first copy it has not
processed. Events in the target that are not copies of the task's source (published there directly,
or copied from elsewhere) were never seen by the consumer: the prefix ends before the first of them.

Copies of one source partition reach a target partition in the source's order, but the copies of
several source partitions (a re-hashed mapping, e.g. 4 → 2) interleave in any order, and a replayed
batch writes copies again. So "processed" is decided per prefix: the prefix up to event i is processed
when, for every source partition P, the highest origin sequence of P in it is <= c_P (and it holds no
foreign event). That maximum only grows along the partition, which makes a binary search possible.

The index keeps, per target partition and at bounded cost:

* **samples**: every ``SAMPLE_EVERY`` events, the position (sequence, offset) and the per-source-
  partition maxima of the prefix; at most ``MAX_SAMPLES`` — when full, the older half is thinned, so
  recent history stays dense and old history sparse;
* a **window** of the last ``WINDOW_EVENTS`` events exactly (position and origin), in memory only: a
  consumer near the tail — the one a failover is about — is translated without reading anything.

A checkpoint older than the window is found by binary search over the samples, then by reading the
events between the last processed sample and the next one (:class:`Refine`), at most
``MAX_REFINE_EVENTS``; a longer gap answers with the last processed event read, which is earlier than
exact (duplicates, never loss).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from federator_spark.translation.layout import BEFORE_FIRST_OFFSET

FOREIGN = "*"  # the pseudo source partition of events that are not copies of the task's source
SAMPLE_EVERY = 1024
MAX_SAMPLES = 256
WINDOW_EVENTS = 16_384
MAX_REFINE_EVENTS = 50_000

Highs = dict[str, int]  # source partition (or FOREIGN) → highest origin sequence number in a prefix
Origin = tuple[str, int] | None  # (source partition, sequence number); None: not a copy of the source


@dataclass(frozen=True)
class Position:
    """An event of the target partition: what a checkpoint names."""

    sequence: int
    offset: str


@dataclass(frozen=True)
class Sample:
    position: Position
    highs: Highs


def processed(highs: Mapping[str, int], checkpoints: Mapping[str, int]) -> bool:
    """Whether a prefix with these maxima was processed by a consumer at ``checkpoints`` (source
    partition → checkpointed sequence number)."""
    if FOREIGN in highs:
        return False
    return all(high <= checkpoints.get(partition, -1) for partition, high in highs.items())


def is_processed(origin: Origin, checkpoints: Mapping[str, int]) -> bool:
    """Whether one event, following a processed prefix, extends it."""
    return origin is not None and origin[1] <= checkpoints.get(origin[0], -1)


@dataclass(frozen=True)
class Refine:
    """The answer lies among the events after ``after`` up to sequence ``until`` (inclusive), which the
    index does not hold: read them, and the last processed one before the first unprocessed is it."""

    after: Position
    until: int


@dataclass
class PartitionIndex:
    """The index of one target partition (see the module docstring)."""

    partition: str
    start: int  # sequence number of the first event indexed (or to be indexed)
    tail: Position | None = None  # the last event indexed
    highs: Highs = field(default_factory=dict)  # maxima of the whole indexed prefix
    samples: list[Sample] = field(default_factory=list)
    since_sample: int = 0
    window: deque[tuple[int, str, Origin]] = field(default_factory=lambda: deque(maxlen=WINDOW_EVENTS))

    # ------------------------------------------------------------------------------------------ building

    def add(self, sequence: int, offset: str, origin: Origin) -> None:
        """The next event of the partition (in sequence order)."""
        key, number = origin if origin is not None else (FOREIGN, sequence)
        if number > self.highs.get(key, -1):
            self.highs[key] = number
        self.tail = Position(sequence, offset)
        self.window.append((sequence, offset, origin))
        self.since_sample += 1
        if self.since_sample >= SAMPLE_EVERY:
            self.since_sample = 0
            self.samples.append(Sample(self.tail, dict(self.highs)))
            if len(self.samples) > MAX_SAMPLES:
                half = len(self.samples) // 2
                self.samples = self.samples[:half:2] + self.samples[half:]

    def expire(self, beginning: int) -> None:
        """Forget what retention removed: events before ``beginning`` (the partition's first sequence
        number) can no longer be read, by a consumer or by a refinement."""
        if beginning <= self.start:
            return
        self.start = beginning
        self.samples = [s for s in self.samples if s.position.sequence >= beginning]

    # ------------------------------------------------------------------------------------------ search

    @property
    def before_first(self) -> Position:
        """Where a consumer that processed nothing of the partition resumes: its first retained event."""
        return Position(self.start - 1, BEFORE_FIRST_OFFSET)

    def locate(self, checkpoints: Mapping[str, int]) -> Position | Refine:
        """The translated checkpoint for a consumer at ``checkpoints``, or what to read to find it."""
        if self.tail is None or processed(self.highs, checkpoints):
            return self.tail or self.before_first
        states = [Sample(self.before_first, {}), *self.samples]
        low, high = 0, len(states)  # states[low] is processed; the answer lies before states[high]
        while high - low > 1:
            middle = (low + high) // 2
            if processed(states[middle].highs, checkpoints):
                low = middle
            else:
                high = middle
        after = states[low].position
        until = states[high].position.sequence if high < len(states) else self.tail.sequence
        if self.window and self.window[0][0] <= after.sequence + 1:
            return self._scan_window(after, checkpoints)
        return Refine(after, until)

    def _scan_window(self, after: Position, checkpoints: Mapping[str, int]) -> Position:
        last = after
        for sequence, offset, origin in self.window:
            if sequence <= after.sequence:
                continue
            if not is_processed(origin, checkpoints):
                break
            last = Position(sequence, offset)
        return last

    # ------------------------------------------------------------------------------------------ storage

    def to_json(self) -> dict[str, Any]:
        """What survives a restart (the window is rebuilt from new events)."""
        return {
            "partition": self.partition,
            "start": self.start,
            "tail": [self.tail.sequence, self.tail.offset] if self.tail else None,
            "highs": self.highs,
            "sinceSample": self.since_sample,
            "samples": [[s.position.sequence, s.position.offset, s.highs] for s in self.samples],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionIndex:
        tail = data.get("tail")
        return cls(
            partition=str(data["partition"]),
            start=int(data["start"]),
            tail=Position(int(tail[0]), str(tail[1])) if tail else None,
            highs={str(k): int(v) for k, v in data.get("highs", {}).items()},
            samples=[Sample(Position(int(s), str(o)), dict(h)) for s, o, h in data.get("samples", [])],
            since_sample=int(data.get("sinceSample", 0)),
        )


def resolve(
    refine: Refine, events: Iterable[tuple[int, str, Origin]], checkpoints: Mapping[str, int]
) -> Position:
    """The answer of a :class:`Refine` from the events after ``refine.after`` in order (at most
    ``MAX_REFINE_EVENTS`` are looked at)."""
    last = refine.after
    for count, (sequence, offset, origin) in enumerate(events):
        if sequence <= refine.after.sequence:
            continue
        if count >= MAX_REFINE_EVENTS or sequence > refine.until or not is_processed(origin, checkpoints):
            break
        last = Position(sequence, offset)
    return last
