"""Stream reader for an event hub: one Spark partition per hub partition, offsets are sequence numbers.

An offset is ``{"<partition id>": <last sequence number read>, ...}`` (``-1``: nothing yet), keys in
numeric order: Spark compares offsets as JSON text, so the order must be stable. A batch reads,
per partition, the sequence numbers in ``(start, end]``. The hub keeps the events, so ``commit`` has
nothing to acknowledge.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from federator_spark.connections import Connection, eventhub_consumer

logger = logging.getLogger(__name__)

Offsets = dict[str, int]
START_POSITIONS = ("earliest", "latest", "enqueuedTime")
# Receive-call batch size and how long one receive call waits before reporting "nothing new".
_RECEIVE_BATCH = 300
_IDLE_WAIT_SECONDS = 1.0


class HubPartition(InputPartition):
    def __init__(self, partition_id: str, partition_count: int, start: int, end: int) -> None:
        super().__init__((partition_id, start, end))
        self.partition_id = partition_id
        self.partition_count = partition_count
        self.start = start
        self.end = end


class EventHubsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Options: ``connection`` (JSON, see :class:`Connection`), ``eventHubName``, ``consumerGroup``
    (default ``$Default``), ``partitionIds`` (comma-separated; default all), ``startPosition``
    (``earliest`` | ``latest`` | ``enqueuedTime``; default earliest), ``startEnqueuedTime`` (ISO 8601),
    ``maxEventsPerTrigger`` (across partitions), ``receiveTimeoutSeconds`` (default 60: a read that
    makes no progress for that long fails the batch)."""

    def __init__(self, options: Any) -> None:
        if "connection" not in options or "eventHubName" not in options:
            raise ValueError("eventhubs source needs the options 'connection' and 'eventHubName'")
        self.connection = Connection.from_option(options["connection"])
        self.event_hub = options["eventHubName"]
        self.consumer_group = options.get("consumerGroup", "$Default")
        ids = options.get("partitionIds")
        self.partition_ids = [p.strip() for p in ids.split(",")] if ids else None
        self.start_position = options.get("startPosition", "earliest")
        if self.start_position not in START_POSITIONS:
            raise ValueError(f"startPosition must be one of {START_POSITIONS}, not {self.start_position!r}")
        self.start_time: datetime | None = None
        if self.start_position == "enqueuedTime":
            if "startEnqueuedTime" not in options:
                raise ValueError("startPosition enqueuedTime needs the option 'startEnqueuedTime'")
            self.start_time = datetime.fromisoformat(options["startEnqueuedTime"].replace("Z", "+00:00"))
        limit = options.get("maxEventsPerTrigger")
        self.max_events = int(limit) if limit else None
        if self.max_events is not None and self.max_events < 1:
            raise ValueError("maxEventsPerTrigger must be at least 1")
        self.receive_timeout = float(options.get("receiveTimeoutSeconds", "60"))
        self.available_now_target: Offsets | None = None
        self._client: Any = None  # driver side only, created lazily (clients cannot be pickled)
        self._partition_count = 0

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    # ------------------------------------------------------------------------------------ driver side

    def _hub(self) -> Any:
        if self._client is None:
            self._client = eventhub_consumer(self.connection, self.event_hub, self.consumer_group)
        return self._client

    def _partitions(self) -> list[str]:
        all_ids = list(self._hub().get_partition_ids())
        self._partition_count = len(all_ids)
        chosen = self.partition_ids or all_ids
        return sorted(chosen, key=int)

    def _last_sequence_numbers(self) -> Offsets:
        hub = self._hub()
        return {
            p: hub.get_partition_properties(p)["last_enqueued_sequence_number"] for p in self._partitions()
        }

    def initialOffset(self) -> Offsets:
        hub = self._hub()
        offsets: Offsets = {}
        for partition in self._partitions():
            props = hub.get_partition_properties(partition)
            last = props["last_enqueued_sequence_number"]
            if self.start_position == "latest" or props["is_empty"]:
                offsets[partition] = last
            elif self.start_position == "earliest":
                offsets[partition] = props["beginning_sequence_number"] - 1
            else:
                offsets[partition] = self._before_time(partition, last)
        logger.info("eventhubs %s: initial offsets %s (%s)", self.event_hub, offsets, self.start_position)
        return offsets

    def _before_time(self, partition: str, last: int) -> int:
        """The sequence number just before the first event enqueued at or after the start time."""
        for events in self._receive(partition, self.start_time, inclusive=True, expected=1):
            return events[0].sequence_number - 1 if events else last
        return last

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_events) if self.max_events else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now_target = self._last_sequence_numbers()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        ends = self.available_now_target or self._last_sequence_numbers()
        ends = {p: max(ends[p], start.get(p, -1)) for p in ends}
        if isinstance(limit, ReadMaxRows):
            ends = cap(start, ends, limit.max_rows)
        return {p: ends[p] for p in sorted(ends, key=int)}

    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        if not self._partition_count:
            self._partitions()
        return [
            HubPartition(p, self._partition_count, start.get(p, -1), end[p])
            for p in sorted(end, key=int)
            if end[p] > start.get(p, -1)
        ]

    def commit(self, end: Offsets) -> None:
        """Nothing to acknowledge: an event hub is a log, and the checkpoint holds the position."""

    # ------------------------------------------------------------------------------------ executor side

    def _receive(
        self, partition: str, position: int | datetime | None, inclusive: bool, expected: int
    ) -> Iterator[list[Any]]:
        return receive(
            self.connection,
            self.event_hub,
            self.consumer_group,
            partition,
            position,
            inclusive=inclusive,
            timeout=self.receive_timeout,
            expected=expected,
        )

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, HubPartition)
        source = f"{self.connection.host}/{self.event_hub}"
        next_expected = partition.start + 1
        wanted = partition.end - partition.start
        for events in self._receive(
            partition.partition_id, partition.start, inclusive=False, expected=wanted
        ):
            if not events:
                continue
            for event in events:
                sequence = event.sequence_number
                if sequence <= partition.start:
                    continue
                if sequence > partition.end:
                    return
                next_expected = sequence + 1
                yield _row(event, source, partition)
            if next_expected > partition.end:
                return


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


def receive(
    connection: Connection,
    event_hub: str,
    consumer_group: str,
    partition: str,
    position: int | datetime | None,
    *,
    inclusive: bool,
    timeout: float,
    expected: int = _RECEIVE_BATCH,
) -> Iterator[list[Any]]:
    """Batches of events from ``position``; an empty batch means nothing arrived for a short while.

    The synchronous client's receive loop only ends when the client is closed, so it runs on a
    thread and hands batches over a queue (closing the async client took ~30 s per receive).
    ``expected`` (how many events the caller still wants) bounds the receive batch: the SDK waits
    for a full batch or ``max_wait_time``, so a smaller bound hands small reads over at once.
    Raises TimeoutError after ``timeout`` seconds without any event.
    """
    client = eventhub_consumer(connection, event_hub, consumer_group)
    handed: queue.Queue[list[Any] | BaseException] = queue.Queue()

    def on_error(_context: Any, error: BaseException) -> None:
        handed.put(error)

    thread = threading.Thread(
        target=client.receive_batch,
        kwargs={
            "on_event_batch": lambda _context, events: handed.put(list(events)),
            "on_error": on_error,
            "partition_id": partition,
            "starting_position": position if position is not None else "-1",
            "starting_position_inclusive": inclusive,
            "max_batch_size": max(1, min(_RECEIVE_BATCH, expected)),
            "max_wait_time": _IDLE_WAIT_SECONDS,
        },
        daemon=True,
        name=f"eventhubs-receive-{partition}",
    )
    thread.start()
    idle_since = None
    try:
        while True:
            try:
                item = handed.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no events from partition {partition} for {timeout}s") from None
            if isinstance(item, BaseException):
                raise item
            if item:
                idle_since = None
            else:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > timeout:
                    raise TimeoutError(f"partition {partition}: expected events did not arrive")
            yield item
    finally:
        # Closing ends the receive loop; joining lets the SDK finish closing its socket (~0.8 s).
        client.close()
        thread.join(timeout=10)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _row(event: Any, source: str, partition: HubPartition) -> tuple[Any, ...]:
    properties = {_text(k): _text(v) for k, v in (event.properties or {}).items()}
    system = {
        name: _text(value)
        for name, value in (
            ("message_id", event.message_id),
            ("content_type", event.content_type),
            ("correlation_id", event.correlation_id),
        )
        if value is not None
    }
    amqp_properties = event.raw_amqp_message.properties
    if amqp_properties is not None:
        for name in ("subject", "to", "reply_to"):
            value = getattr(amqp_properties, name, None)
            if value is not None:
                system[name] = _text(value)
    key = event.partition_key
    body = event.body
    return (
        body if isinstance(body, bytes) else b"".join(body),
        source,
        partition.partition_id,
        partition.partition_count,
        event.sequence_number,
        str(event.offset),
        event.enqueued_time,
        _text(key) if key is not None else None,
        properties,
        system,
    )
