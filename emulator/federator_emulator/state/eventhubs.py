"""Event Hubs state: partition logs of encoded events. Plain objects, no protocol.

A partition keeps every event as the bytes the client sent, packed into one bytearray
with two parallel integer arrays (start offset, enqueued time). Python objects per event
would cost ~10x the memory; broker annotations are spliced in on delivery instead.
The offset of an event is its byte position in the partition's log, as on Azure.
"""

from __future__ import annotations

import itertools
import zlib
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from federator_contract.emulatorconfig import EventHubConfig


class UnknownEntity(LookupError):
    """The addressed entity (hub, partition, consumer group, queue ...) does not exist."""


@dataclass(frozen=True)
class StoredEvent:
    sequence_number: int
    offset: int
    enqueued_time_ms: int
    payload: bytes


@dataclass(frozen=True)
class EventRange:
    """Consecutive events of a partition, column by column as the log keeps them (an object per event
    costs a consumer more than sending the event)."""

    first_sequence_number: int
    offsets: array[int]
    enqueued_times_ms: array[int]
    payloads: list[bytes]

    @property
    def next_sequence_number(self) -> int:
        return self.first_sequence_number + len(self.payloads)


class PartitionLog:
    def __init__(self, partition_id: str) -> None:
        self.partition_id = partition_id
        self._data = bytearray()
        self._base = 0  # log offset of _data[0]; grows when retention drops events
        self._offsets = array("q")
        self._times = array("q")
        self._first_seq = 0  # sequence number of _offsets[0]
        self._end_offset = 0  # log offset the next event will get
        self.listeners: list[Callable[[PartitionLog], None]] = []

    # -- reading ------------------------------------------------------------------
    @property
    def begin_sequence_number(self) -> int:
        return self._first_seq

    @property
    def next_sequence_number(self) -> int:
        return self._first_seq + len(self._offsets)

    @property
    def is_empty(self) -> bool:
        return not self._offsets

    def last(self) -> StoredEvent | None:
        """The last enqueued event, or None when the partition holds none."""
        if not self._offsets:
            return None
        return self.get(self.next_sequence_number - 1)

    def get(self, sequence_number: int) -> StoredEvent:
        if not self._first_seq <= sequence_number < self.next_sequence_number:
            raise IndexError(sequence_number)
        one = self.read(sequence_number, 1)
        return StoredEvent(sequence_number, one.offsets[0], one.enqueued_times_ms[0], one.payloads[0])

    def read(self, first: int, limit: int) -> EventRange:
        """Up to ``limit`` events in order from sequence number ``first`` (or the earliest retained)."""
        count = len(self._offsets)
        start = max(first - self._first_seq, 0)
        stop = max(start, min(start + limit, count))
        bounds = [*self._offsets[start:stop], self._offsets[stop] if stop < count else self._end_offset]
        base = self._base
        with memoryview(self._data) as data:  # one copy per payload, none of the log
            payloads = [bytes(data[at - base : end - base]) for at, end in itertools.pairwise(bounds)]
        return EventRange(
            self._first_seq + start, self._offsets[start:stop], self._times[start:stop], payloads
        )

    def first_after_offset(self, offset: int, inclusive: bool) -> int:
        """Sequence number of the first event at (inclusive) or after the log offset."""
        return self._first_seq + _bisect(self._offsets, offset, inclusive)

    def first_after_time(self, time_ms: int, inclusive: bool) -> int:
        return self._first_seq + _bisect(self._times, time_ms, inclusive)

    def clamp(self, sequence_number: int) -> int:
        """Earliest still-retained sequence number at or after the requested one."""
        return max(sequence_number, self._first_seq)

    # -- writing ------------------------------------------------------------------
    def append(self, payload: bytes, enqueued_time_ms: int) -> None:
        self.extend((payload,), enqueued_time_ms)

    def extend(self, payloads: Sequence[bytes], enqueued_time_ms: int) -> None:
        """Append events enqueued together (a batch)."""
        offsets = list(itertools.accumulate(map(len, payloads), initial=self._end_offset))
        self._end_offset = offsets.pop()
        self._offsets.extend(offsets)
        self._times.extend(itertools.repeat(enqueued_time_ms, len(offsets)))
        self._data += b"".join(payloads)

    def notify(self) -> None:
        for listener in list(self.listeners):
            listener(self)

    def expire_before(self, time_ms: int) -> int:
        """Drop events enqueued before ``time_ms``; returns how many were dropped."""
        drop = _bisect(self._times, time_ms, inclusive=True)
        if not drop:
            return 0
        new_base = self._offsets[drop] if drop < len(self._offsets) else self._end_offset
        del self._offsets[:drop]
        del self._times[:drop]
        del self._data[: new_base - self._base]
        self._base = new_base
        self._first_seq += drop
        return drop


def _bisect(values: array[int], key: int, inclusive: bool) -> int:
    """Index of the first value >= key (inclusive) or > key (exclusive); values ascend."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < key or (not inclusive and values[mid] == key):
            lo = mid + 1
        else:
            hi = mid
    return lo


class EventHub:
    def __init__(self, config: EventHubConfig, created_at_ms: int) -> None:
        self.config = config
        self.created_at_ms = created_at_ms
        self.partitions = {str(i): PartitionLog(str(i)) for i in range(config.partition_count)}
        self._round_robin = itertools.cycle(list(self.partitions))

    @property
    def name(self) -> str:
        return self.config.name

    def partition(self, partition_id: str) -> PartitionLog:
        try:
            return self.partitions[partition_id]
        except KeyError:
            raise UnknownEntity(f"event hub {self.name!r} has no partition {partition_id!r}") from None

    def has_consumer_group(self, name: str) -> bool:
        return name.lower() in (g.lower() for g in self.config.all_consumer_groups)

    def route(self, partition_key: str | None) -> PartitionLog:
        """Partition for an event sent to the hub: by a stable hash of the key, else round robin."""
        if partition_key is None:
            return self.partitions[next(self._round_robin)]
        index = zlib.crc32(partition_key.encode()) % len(self.partitions)
        return self.partitions[str(index)]

    def expire(self, now_ms: int) -> int:
        cutoff = now_ms - self.config.retention_seconds * 1000
        return sum(p.expire_before(cutoff) for p in self.partitions.values())
