"""Stream reader for an event hub: one Spark partition per hub partition, offsets are sequence numbers.

An offset is ``{"<partition id>": <last sequence number read>, ...}`` (``-1``: nothing yet), keys in
numeric order: Spark compares offsets as JSON text, so the order must be stable. A batch reads,
per partition, the sequence numbers in ``(start, end]``. The hub keeps the events, so ``commit`` has
nothing to acknowledge.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from federator_contract.files import write_atomically
from federator_spark import logs, metrics, property_types, worker_gc
from federator_spark.connections import eventhub_consumer
from federator_spark.eventhubs_management import HubManagement, PartitionPositions
from federator_spark.events import Event
from federator_spark.outages import Backoff, Endpoint, failure, retrying, words
from federator_spark.property_types import as_text
from federator_spark.sources import eventhubs_streams, trigger_phase
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.eventhubs_streams import receive, sequence_number

__all__ = ["EventHubsStreamReader", "HubPartition", "cap", "receive", "sequence_number", "to_event"]

logger = logging.getLogger(__name__)

Offsets = dict[str, int]
_OFFSET = b"x-opt-offset"
_ENQUEUED_TIME = b"x-opt-enqueued-time"
_PARTITION_KEY = b"x-opt-partition-key"
_NEVER = datetime.fromtimestamp(0, UTC)  # an event without an enqueued time (not from Event Hubs)
# With no trigger interval Spark asks for new offsets 10 ms after an empty answer: an idle hub is asked
# at most this often instead (each ask is a management request per partition, and they count against
# the namespace's quota), at the price of up to this much latency for the first event after a pause.
_IDLE_POLL_SECONDS = 0.25
# A hub with nothing new for `_QUIET_AFTER_SECONDS` is asked only this often, until its next event: an
# idle query's asks were most of its CPU, and its namespace's (bench.fleet, docs/replication.md). Steady
# traffic never waits this long, so only the first event after a quiet spell pays up to 1 s.
_QUIET_POLL_SECONDS = 1.0
_QUIET_AFTER_SECONDS = 10.0
# After `_STILL_AFTER_SECONDS` with nothing new, every `_STILL_POLL_SECONDS`: an idle member of a shared
# application still cost a quarter of a percent of a core in these asks (bench.fleet, docs/sharing.md).
# The first event after such a pause waits up to 3 s for its batch instead of 1 s.
_STILL_POLL_SECONDS = 3.0
_STILL_AFTER_SECONDS = 30.0
# Spark's ask is held until the next poll is due, for at most this long: each ask that finds nothing costs
# the query's JVM thread a trigger too. A query's stop does not wait for it: Spark interrupts the ask.
_LONGEST_WAIT_SECONDS = _STILL_POLL_SECONDS
# AMQP message properties that travel in the row's system_properties.
_SYSTEM_PROPERTIES = ("message_id", "content_type", "correlation_id", "subject", "to", "reply_to")


class HubPartition(InputPartition):
    def __init__(self, partition_id: str, partition_count: int, start: int, end: int) -> None:
        super().__init__((partition_id, start, end))
        self.partition_id = partition_id
        self.partition_count = partition_count
        self.start = start
        self.end = end


class EventHubsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Reads what :class:`HubSourceSettings` names. As the ``eventhubs`` data source, from the options
    ``connection`` (JSON, see :class:`Connection`), ``eventHubName``, ``consumerGroup`` (default
    ``$Default``), ``partitionIds`` (comma-separated; default all), ``startPosition`` (``earliest`` |
    ``latest`` | ``enqueuedTime``; default earliest), ``startEnqueuedTime`` (ISO 8601),
    ``maxEventsPerTrigger`` (across partitions), ``receiveTimeoutSeconds`` (default 60: a read that
    makes no progress for that long, the namespace answering, fails the batch), ``statusFile`` (where an
    outage of the event hub is reported while it is retried), ``startPositionsFile`` (where the first start
    positions are kept until the first batch is committed)."""

    def __init__(self, settings: HubSourceSettings) -> None:
        logs.configure()  # the driver's source process
        self.settings = settings
        self.endpoint = Endpoint("source", settings.event_hub, settings.status_file)
        self.available_now_target: Offsets | None = None
        self._management: HubManagement | None = None  # driver side only, created lazily
        self._positions: PartitionPositions | None = None  # likewise: the polls' reads, side by side
        self._next_idle_poll = 0.0  # time.monotonic() before which an idle hub is not asked again
        self._last_news = time.monotonic()  # when a poll last found new events (or the reader began)
        self._outage = Backoff()  # the driver's polls while the namespace is unavailable
        self._partition_count = 0
        # Until the run's first answer: with nothing new, Spark makes no batch on a checkpoint that has
        # one, and a FailoverGroup times a follower's arrival on a member by its first batch there.
        self._first_answer = True
        self._initial: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_management"] = state["_positions"] = None  # clients cannot be pickled
        return state

    def _retrying(self, action: Any, what: str) -> Any:
        return retrying(action, self.endpoint, f"{what} of {self.settings.event_hub}")

    # ------------------------------------------------------------------------------------ driver side

    def _consumer(self) -> Any:
        settings = self.settings
        return eventhub_consumer(settings.connection, settings.event_hub, settings.consumer_group)

    def _hub(self) -> HubManagement:
        if self._management is None:
            self._management = HubManagement(self._consumer())
        return self._management

    def _partitions(self) -> list[str]:
        all_ids = self._hub().partition_ids()
        self._partition_count = len(all_ids)
        return sorted(self.settings.partition_ids, key=int) if self.settings.partition_ids else all_ids

    def _last_sequence_numbers(self) -> Offsets:
        if self._positions is None:
            self._positions = PartitionPositions(self._consumer)
        return self._positions.last_sequence_numbers(self._partitions())

    def initialOffset(self) -> Offsets:
        """Read once per run: Spark asks twice when a query starts on a checkpoint without positions (a
        member a follower had not read before), and an ``enqueuedTime`` start opens a receiver per
        partition to answer (a second answer, later, could even differ for ``latest``)."""
        if self._initial is None:
            self._initial = self._retrying(self._kept_initial_offsets, "reading the start positions")
        return dict(self._initial)

    def _kept_initial_offsets(self) -> Offsets:
        """The first answer, kept in ``start_file``: until the checkpoint's first batch is committed, Spark
        asks for the start again at each start of the query, to run that batch again. Read anew, a
        ``latest`` start lay past the events the batch was planned to read, and a crash before its commit
        lost them (Spark's Kafka source keeps its first offsets in the checkpoint for the same reason). A
        start the task's spec no longer asks for is read anew."""
        path = Path(self.settings.start_file) if self.settings.start_file else None
        asked = self._start_asked()
        kept = _kept(path)
        if kept is not None and kept.get("asked") == asked:
            logger.info("eventhubs %s: initial offsets kept %s", self.settings.event_hub, kept["offsets"])
            return {partition: int(offset) for partition, offset in kept["offsets"].items()}
        offsets = self._initial_offsets()
        if path is not None:
            write_atomically(
                path, json.dumps({"asked": asked, "offsets": offsets}, sort_keys=True), durable=True
            )
        return offsets

    def _start_asked(self) -> dict[str, Any]:
        """What the kept positions answered: the entity and the start the spec asked for."""
        settings = self.settings
        return {
            "eventHub": settings.event_hub,
            "consumerGroup": settings.consumer_group,
            "partitionIds": list(settings.partition_ids) if settings.partition_ids else None,
            "startPosition": settings.start_position,
            "startTime": settings.start_time.isoformat() if settings.start_time else None,
        }

    def _initial_offsets(self) -> Offsets:
        hub = self._hub()
        offsets: Offsets = {}
        for partition in self._partitions():
            props = hub.partition_properties(partition)
            last = props["last_enqueued_sequence_number"]
            if self.settings.start_position == "latest" or props["is_empty"]:
                offsets[partition] = last
            elif self.settings.start_position == "earliest":
                offsets[partition] = props["beginning_sequence_number"] - 1
            else:
                offsets[partition] = self._before_time(partition, last)
        logger.info(
            "eventhubs %s: initial offsets %s (%s)",
            self.settings.event_hub,
            offsets,
            self.settings.start_position,
        )
        return offsets

    def _before_time(self, partition: str, last: int) -> int:
        """The sequence number just before the first event enqueued at or after the start time."""
        for events in receive(
            self.settings.connection,
            self.settings.event_hub,
            self.settings.consumer_group,
            partition,
            self.settings.start_time,
            inclusive=True,
            timeout=self.settings.receive_timeout,
            expected=1,
            endpoint=self.endpoint,
        ):
            return sequence_number(events[0]) - 1 if events else last
        return last

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.settings.max_events) if self.settings.max_events else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # One read of every partition's tail, over the one management link: the links side by side
        # (`_last_sequence_numbers`, a connection each) pay off in the polls of a running query.
        self.available_now_target = self._retrying(
            lambda: self._hub().last_sequence_numbers(self._partitions()), "reading the positions"
        )

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        trigger_phase.hold(self.settings.phase)
        ends = self.available_now_target or self._poll(start)
        ends = {p: max(ends[p], start.get(p, -1)) for p in ends}
        if isinstance(limit, ReadMaxRows):
            ends = cap(start, ends, limit.max_rows)
        return {p: ends[p] for p in sorted(ends, key=int)}

    def _poll(self, start: Offsets) -> Offsets:
        """The partitions' last sequence numbers, asked no sooner than ``_IDLE_POLL_SECONDS`` after an
        ask that found nothing beyond ``start`` (``_QUIET_POLL_SECONDS`` once nothing new came for
        ``_QUIET_AFTER_SECONDS``, ``_STILL_POLL_SECONDS`` after ``_STILL_AFTER_SECONDS``). While the
        namespace is unavailable this is ``start`` (no batch, the query waits) and the next ask comes
        after a growing pause."""
        wait = self._next_idle_poll - time.monotonic()
        if wait > 0:
            time.sleep(min(wait, _LONGEST_WAIT_SECONDS))  # then Spark asks again
            if self._next_idle_poll > time.monotonic():
                return start
        try:
            ends = self._last_sequence_numbers()
        except Exception as error:
            failure(
                error, self.endpoint, f"reading the positions of {self.settings.event_hub}"
            )  # raises a refusal
            delay = self._outage.next()
            logger.warning(
                "eventhubs %s: %s; asking again in %.1f s", self.settings.event_hub, words(error), delay
            )
            self._next_idle_poll = time.monotonic() + delay
            return start
        if self._outage.failures:
            self._outage.reset()
            self.endpoint.available()
            logger.info("eventhubs %s: available again", self.settings.event_hub)
        now = time.monotonic()
        if any(end > start.get(p, -1) for p, end in ends.items()):
            self._last_news, self._next_idle_poll = now, 0.0
        else:
            self._next_idle_poll = now + self._idle_poll_seconds(now)
            if self._first_answer and self.settings.status_file is not None:
                metrics.arrived(self.settings.status_file)  # caught up on the member: no batch to wait for
        self._first_answer = False
        return ends

    def _idle_poll_seconds(self, now: float) -> float:
        quiet = now - self._last_news
        if quiet >= _STILL_AFTER_SECONDS:
            return _STILL_POLL_SECONDS
        return _QUIET_POLL_SECONDS if quiet >= _QUIET_AFTER_SECONDS else _IDLE_POLL_SECONDS

    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        if not self._partition_count:
            self._retrying(self._partitions, "listing the partitions")
        return [
            HubPartition(p, self._partition_count, start.get(p, -1), end[p])
            for p in sorted(end, key=int)
            if end[p] > start.get(p, -1)
        ]

    def commit(self, end: Offsets) -> None:
        """Nothing to acknowledge: an event hub is a log, and the checkpoint holds the position."""

    def stop(self) -> None:
        """The run ends (Spark's source runner calls this as the query stops): its management link goes."""
        management, self._management = self._management, None
        if management is not None:
            management.close()

    # ------------------------------------------------------------------------------------ executor side

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, HubPartition)
        for event in self.read_events(partition):
            yield event.as_row()

    def stream(self, partition: HubPartition) -> eventhubs_streams.PartitionStream:
        """A receiver positioned for ``partition``'s range: this worker's kept one, or a new one."""
        return eventhubs_streams.take(
            self.settings.connection,
            self.settings.event_hub,
            self.settings.consumer_group,
            partition.partition_id,
            partition.start,
            self.endpoint,
        )

    def read_events(
        self, partition: HubPartition, stream: eventhubs_streams.PartitionStream | None = None
    ) -> Iterator[Event]:
        """The events of ``partition``'s range, in sequence order (what :meth:`read` turns into rows),
        from ``stream`` if given (see :meth:`stream`)."""
        logs.configure()  # an executor's Python worker
        worker_gc.freeze_loaded()
        source = f"{self.settings.connection.host}/{self.settings.event_hub}"
        stream = stream or self.stream(partition)
        finished = False
        try:
            for events in stream.read_range(partition.start, partition.end, self.settings.receive_timeout):
                for event in events:
                    yield to_event(event, source, partition.partition_id, partition.partition_count)
            finished = True
        finally:
            # A stream read to the end continues with this worker's next task on the partition.
            if finished:
                eventhubs_streams.keep(stream)
            else:
                stream.close()


def cap(start: Offsets, ends: Offsets, max_rows: int) -> Offsets:
    """Spread ``max_rows`` over the partitions with pending events, fairly (water-filling)."""
    pending = {p: max(0, ends[p] - start.get(p, -1)) for p in ends}
    granted = dict.fromkeys(ends, 0)
    budget = max_rows
    active = [p for p in sorted(ends, key=int) if pending[p] > 0]
    while budget > 0 and active:
        share = max(1, budget // len(active))
        for partition in list(active):
            take = min(share, pending[partition] - granted[partition], budget)
            granted[partition] += take
            budget -= take
            if granted[partition] == pending[partition]:
                active.remove(partition)
            if budget == 0:
                break
    return {p: start.get(p, -1) + granted[p] for p in ends}


def to_event(message: Any, source: str, partition: str, partition_count: int) -> Event:
    """A received AMQP message (the SDK's decoded ``Message``) as the app's :class:`Event`; reads what
    ``EventData``'s accessors would, straight from the sections."""
    annotations = message.message_annotations
    properties, types = property_types.read(message.application_properties)
    system: dict[str, str] = {}
    amqp_properties = message.properties
    if amqp_properties is not None:
        for name in _SYSTEM_PROPERTIES:
            value = getattr(amqp_properties, name, None)
            if value is not None:
                system[name] = as_text(value)
    key = annotations.get(_PARTITION_KEY)
    enqueued = annotations.get(_ENQUEUED_TIME)
    return Event(
        _body(message),
        source,
        partition,
        partition_count,
        sequence_number(message),
        as_text(annotations.get(_OFFSET)),
        datetime.fromtimestamp(enqueued / 1000, UTC) if enqueued is not None else _NEVER,
        as_text(key) if key is not None else None,
        properties,
        system,
        types,
    )


def _body(message: Any) -> bytes:
    """The data sections joined; an AMQP value body (rare on Event Hubs) as its text."""
    if message.data:
        return b"".join(message.data)
    value = message.value
    if isinstance(value, bytes):
        return value
    return as_text(value).encode() if value is not None else b""


def _kept(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        kept: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return kept
