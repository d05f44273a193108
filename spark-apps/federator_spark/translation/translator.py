"""Checkpoint translation, on the replication app's driver: a thread that every ``intervalSeconds``
brings the target partitions' index up to date (reading what was appended since the last cycle), then
translates each consumer group's source checkpoints into checkpoints on the target, written in the
layout of the Event Hubs SDK's ``BlobCheckpointStore``; and once more when the app stops.

A cycle per consumer group costs two or three Blob listings (the source checkpoints; the target's
checkpoints and ownership claims), a write per target partition whose translation changed, and reads
only for checkpoints older than the index's window (see ``index.py``).

**Consumers on the target are never overruled.** A partition whose ownership a consumer claimed on the
target recently (``OWNER_ACTIVE_SECONDS``) is left alone; so is a checkpoint someone else wrote there
(the blob is not the one this translator wrote last), until the group's checkpoints on the source move
again, i.e. until the consumers are back on the source. Writes are conditional on the blob being as it
was listed, so a consumer's checkpoint written meanwhile wins.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from federator_contract.files import write_atomically
from federator_contract.names import SOURCE_ID_PROPERTY
from federator_spark.connections import Connection, eventhub_consumer
from federator_spark.eventhubs_management import HubManagement
from federator_spark.sources.eventhubs_streams import PartitionStream, receive, sequence_number
from federator_spark.translation.index import (
    MAX_REFINE_EVENTS,
    Origin,
    PartitionIndex,
    Position,
    Refine,
    resolve,
)
from federator_spark.translation.layout import ConsumerGroupRef
from federator_spark.translation.store import BlobLocation, CheckpointBlobs, Counts, StoredCheckpoint

logger = logging.getLogger(__name__)

# An EventProcessor re-claims its partitions every load-balancing round (10-30 s by default) and lets a
# claim expire after 6 rounds: a claim younger than this means a consumer reads the partition now.
OWNER_ACTIVE_SECONDS = 180.0
INDEX_EVENTS_PER_CYCLE = 200_000  # per target partition: a first cycle over a long retention catches up
_READ_TIMEOUT_SECONDS = 30.0
_PARALLEL_READS = 16
_OFFSET = b"x-opt-offset"
_SOURCE_ID = SOURCE_ID_PROPERTY.encode()


@dataclass(frozen=True)
class TranslationPlan:
    """What the translator needs, built on the driver from the task config (``plan.py``)."""

    groups: tuple[str, ...]
    source: ConsumerGroupRef  # consumer_group left empty: one per group
    target: ConsumerGroupRef
    origin_prefix: str  # `repl-source-id` of a copy of the task's source: `<host>/<hub>/<partition>/<seq>`
    target_connection: Connection
    index_consumer_group: str
    source_store: BlobLocation
    target_store: BlobLocation
    interval_seconds: float
    state_dir: str
    report_file: str | None = None  # the last cycle, beside the status file (`/status` of the driver)

    def group(self, side: ConsumerGroupRef, name: str) -> ConsumerGroupRef:
        return ConsumerGroupRef(side.fully_qualified_namespace, side.event_hub, name)


@dataclass
class GroupCycle:
    """One consumer group in one cycle."""

    source_checkpoints: int = 0
    written: int = 0
    unchanged: int = 0
    consumers_on_target: int = 0  # partitions left alone: a consumer claimed or checkpointed them there
    conflicts: int = 0
    events_read: int = 0  # refinement reads
    reads: int = 0  # refinement read requests
    storage: Counts = field(default_factory=Counts)
    seconds: float = 0.0
    positions: dict[str, int] = field(default_factory=dict)  # target partition → translated sequence


@dataclass
class CycleReport:
    at: str
    index_events_read: int
    index_seconds: float
    groups: dict[str, GroupCycle]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Handoff:
    """Per group and target partition: the blob this translator wrote last, and the source checkpoints
    it found when someone else's checkpoint was met there."""

    etag: str | None = None
    held_at: dict[str, int] | None = None


class Translator:
    def __init__(self, plan: TranslationPlan) -> None:
        self.plan = plan
        self.state = Path(plan.state_dir)
        self._client = eventhub_consumer(
            plan.target_connection, plan.target.event_hub, plan.index_consumer_group
        )
        self._management = HubManagement(self._client)
        self._streams: dict[str, PartitionStream] = {}
        self.indexes: dict[str, PartitionIndex] = {}
        self._handoffs: dict[str, dict[str, _Handoff]] = self._load_handoffs()
        self._source_store = CheckpointBlobs(plan.source_store)
        self._target_store = (
            self._source_store
            if plan.target_store == plan.source_store
            else CheckpointBlobs(plan.target_store)
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last: CycleReport | None = None

    # ------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="federator-translation", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.cycle()
            except Exception as error:  # a storage or hub outage: the next cycle tries again
                logger.warning("checkpoint translation cycle failed: %r", error)
            self._stop.wait(self.plan.interval_seconds)

    def stop(self, final: bool = True) -> None:
        """Stop the cycles; ``final`` runs one more (the app stops: a FailoverGroup may be switching)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.plan.interval_seconds + 120)
        try:
            if final:
                report = self.cycle()
                logger.info("checkpoint translation: final cycle %s", _summary(report))
        finally:
            self.close()

    def close(self) -> None:
        for stream in self._streams.values():
            stream.close(wait=True)
        self._streams.clear()
        self._management.close()
        self._client.close()
        self._source_store.close()
        if self._target_store is not self._source_store:
            self._target_store.close()

    # ------------------------------------------------------------------------------------------ a cycle

    def cycle(self) -> CycleReport:
        started = time.monotonic()
        read = self.update_index()
        index_seconds = time.monotonic() - started
        groups = {group: self.translate(group) for group in self.plan.groups}
        report = CycleReport(_now(), read, round(index_seconds, 3), groups)
        self._save(report)
        self.last = report
        return report

    def update_index(self) -> int:
        """Index what was appended to every target partition since the last cycle."""
        read = 0
        for partition in self._management.partition_ids():
            properties = self._management.partition_properties(partition)
            index = self._index(partition, properties["beginning_sequence_number"])
            index.expire(properties["beginning_sequence_number"])
            after = index.tail.sequence if index.tail else index.start - 1
            last = properties["last_enqueued_sequence_number"]
            if properties["is_empty"] or last <= after:
                continue
            until = min(last, after + INDEX_EVENTS_PER_CYCLE)
            for sequence, offset, origin in self._read_range(partition, after, until):
                index.add(sequence, offset, origin)
                read += 1
        return read

    def translate(self, group: str) -> GroupCycle:
        started = time.monotonic()
        report = GroupCycle()
        store_before = replace(self._source_store.counts)
        target_before = replace(self._target_store.counts)
        source = self.plan.group(self.plan.source, group)
        target = self.plan.group(self.plan.target, group)
        checkpoints = {p: c.sequence_number for p, c in self._source_store.checkpoints(source).items()}
        report.source_checkpoints = len(checkpoints)
        if checkpoints:  # a group that never checkpointed on the source starts where it is configured to
            current = self._target_store.checkpoints(target)
            claims = self._target_store.claims(target)
            handoffs = self._handoffs.setdefault(group, {})
            for partition, position in sorted(
                self._positions(checkpoints, report).items(), key=lambda p: int(p[0])
            ):
                report.positions[partition] = position.sequence
                self._write(
                    target, partition, position, checkpoints, current.get(partition), claims, handoffs, report
                )
        report.storage = _spent(self._source_store, store_before)
        if self._target_store is not self._source_store:
            report.storage.add(_spent(self._target_store, target_before))
        report.seconds = round(time.monotonic() - started, 4)
        return report

    def _positions(self, checkpoints: dict[str, int], report: GroupCycle) -> dict[str, Position]:
        """The translated checkpoint of every target partition; the refinement reads side by side
        (opening a receiver costs the SDK about a second, mostly waiting)."""
        positions: dict[str, Position] = {}
        reads: dict[str, Refine] = {}
        for partition, index in self.indexes.items():
            found = index.locate(checkpoints)
            if isinstance(found, Position):
                positions[partition] = found
            else:
                reads[partition] = found
        if reads:
            with ThreadPoolExecutor(
                min(len(reads), _PARALLEL_READS), thread_name_prefix="translation-read"
            ) as pool:
                done = pool.map(lambda item: self._refine(item[0], item[1], checkpoints), reads.items())
                for partition, (position, count) in zip(reads, done, strict=True):
                    positions[partition] = position
                    report.reads += 1
                    report.events_read += count
        return positions

    def _refine(self, partition: str, refine: Refine, checkpoints: dict[str, int]) -> tuple[Position, int]:
        counted = _Counted(self._refinement(partition, refine))
        return resolve(refine, counted, checkpoints), counted.count

    def _write(
        self,
        target: ConsumerGroupRef,
        partition: str,
        position: Position,
        checkpoints: dict[str, int],
        current: StoredCheckpoint | None,
        claims: dict[str, datetime],
        handoffs: dict[str, _Handoff],
        report: GroupCycle,
    ) -> None:
        handoff = handoffs.setdefault(partition, _Handoff())
        if current is not None and (current.sequence_number, current.offset) == (
            position.sequence,
            position.offset,
        ):
            report.unchanged += 1
            return
        claimed = claims.get(partition)
        if claimed is not None and (datetime.now(UTC) - claimed).total_seconds() < OWNER_ACTIVE_SECONDS:
            report.consumers_on_target += 1
            return
        if current is not None and current.etag != handoff.etag:  # someone else's checkpoint
            if handoff.held_at is None:
                handoff.held_at = dict(checkpoints)
            if handoff.held_at == checkpoints:  # the consumers have not checkpointed on the source since
                report.consumers_on_target += 1
                return
        etag = self._target_store.write(
            target, partition, position.offset, position.sequence, current.etag if current else None
        )
        if etag is None:
            report.conflicts += 1
            return
        handoff.etag, handoff.held_at = etag, None
        report.written += 1

    # ------------------------------------------------------------------------------------------ reading

    def _index(self, partition: str, beginning: int) -> PartitionIndex:
        index = self.indexes.get(partition)
        if index is None:
            path = self.state / "index" / f"{partition}.json"
            index = (
                PartitionIndex.from_json(json.loads(path.read_text()))
                if path.exists()
                else PartitionIndex(partition, beginning)
            )
            self.indexes[partition] = index
        return index

    def _read_range(self, partition: str, after: int, until: int) -> Iterator[tuple[int, str, Origin]]:
        stream = self._streams.get(partition)
        if stream is None or stream.broken or stream.position != after:
            if stream is not None:
                stream.close()
            stream = self._streams[partition] = PartitionStream(
                self.plan.target_connection,
                self.plan.target.event_hub,
                self.plan.index_consumer_group,
                partition,
                after,
            )
        for events in stream.read_range(after, until, _READ_TIMEOUT_SECONDS):
            for message in events:
                yield self._event(message)

    def _refinement(self, partition: str, refine: Refine) -> Iterator[tuple[int, str, Origin]]:
        wanted = min(refine.until - refine.after.sequence, MAX_REFINE_EVENTS)
        for events in receive(
            self.plan.target_connection,
            self.plan.target.event_hub,
            self.plan.index_consumer_group,
            partition,
            refine.after.sequence,
            inclusive=False,
            timeout=_READ_TIMEOUT_SECONDS,
            expected=wanted,
        ):
            for message in events:
                event = self._event(message)
                yield event
                if event[0] >= refine.until:
                    return

    def _event(self, message: Any) -> tuple[int, str, Origin]:
        offset = message.message_annotations.get(_OFFSET)
        offset_text = offset.decode() if isinstance(offset, bytes) else str(offset)
        return sequence_number(message), offset_text, self._origin(message.application_properties)

    def _origin(self, properties: dict[Any, Any] | None) -> Origin:
        value = (properties or {}).get(_SOURCE_ID)
        text = value.decode() if isinstance(value, bytes) else value
        if not isinstance(text, str) or not text.startswith(self.plan.origin_prefix):
            return None
        partition, _, number = text[len(self.plan.origin_prefix) :].partition("/")
        return (partition, int(number)) if number.isdigit() else None

    # ------------------------------------------------------------------------------------------ state

    def _load_handoffs(self) -> dict[str, dict[str, _Handoff]]:
        path = self.state / "handoffs.json"
        if not path.exists():
            return {}
        raw = json.loads(path.read_text())
        return {g: {p: _Handoff(**h) for p, h in parts.items()} for g, parts in raw.items()}

    def _save(self, report: CycleReport) -> None:
        for partition, index in self.indexes.items():
            write_atomically(self.state / "index" / f"{partition}.json", json.dumps(index.to_json()))
        handoffs = {g: {p: asdict(h) for p, h in parts.items()} for g, parts in self._handoffs.items()}
        write_atomically(self.state / "handoffs.json", json.dumps(handoffs, sort_keys=True))
        text = json.dumps(report.to_json(), indent=2, sort_keys=True)
        write_atomically(self.state / "last-cycle.json", text)
        if self.plan.report_file is not None:
            write_atomically(Path(self.plan.report_file), text)


class _Counted:
    """Counts what a refinement actually read."""

    def __init__(self, events: Iterator[tuple[int, str, Origin]]) -> None:
        self._events = events
        self.count = 0

    def __iter__(self) -> Iterator[tuple[int, str, Origin]]:
        for event in self._events:
            self.count += 1
            yield event


def _spent(store: CheckpointBlobs, before: Counts) -> Counts:
    now = store.counts
    return Counts(now.lists - before.lists, now.writes - before.writes, now.conflicts - before.conflicts)


def _summary(report: CycleReport) -> str:
    return ", ".join(
        f"{name}: {g.written} written, {g.unchanged} unchanged, {g.consumers_on_target} left to consumers"
        for name, g in report.groups.items()
    )


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
