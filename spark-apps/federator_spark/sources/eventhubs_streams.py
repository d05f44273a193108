"""Receiving from event hub partitions: one-off reads, and the open receivers Spark read tasks reuse.

A :class:`PartitionStream` drives one SDK partition consumer (``EventHubConsumer``, the link the SDK's
``receive_batch`` uses) on a thread of its own and hands the received AMQP messages over a bounded
buffer (the bound stops the receiver when nobody reads: an idle stream holds a few thousand events,
not the backlog). It hands over the SDK's decoded messages, not ``EventData``: wrapping each in ``EventData``
and reading it back through its accessors cost a third of the receive CPU, and the app turns a
message into its own :class:`~federator_spark.events.Event` anyway (``sources/eventhubs.py``). It does
not run the SDK's ``EventProcessor`` either (load balancing and checkpoint stores are Spark's business
here); a broken link is reopened from the last sequence number received, with capped backoff for as
long as the namespace is unavailable (reported as an outage of ``endpoint``, ``outages.py``); only a
refusal (credentials, a missing entity) ends the stream with its error.

Opening a receiver costs 0.5-1.5 s with the Python SDK (its handshake sleeps 50 ms per frame),
longer than a whole micro-batch should take, so a Python worker keeps its streams open between
tasks (:func:`take` / :func:`keep`). Spark gives a partition's next task to any idle worker, so a
kept stream may be behind the position asked for: it skips forward when the gap is small (those
events are mostly buffered already), and is reopened otherwise. A stream unused for
``_IDLE_CLOSE_SECONDS`` is closed, so a partition has at most one receiver per Python worker that
read it recently (Event Hubs allows 5 per partition and consumer group).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from federator_spark.connections import Connection, eventhub_consumer
from federator_spark.outages import Backoff, Endpoint, EndpointRefusedError, failure, words

logger = logging.getLogger(__name__)

# The SDK's receive grants ``prefetch`` messages of link credit and grants more only once all have
# arrived: the broker idles for a round trip every ``prefetch`` messages. The stream tops the credit
# up when half is used, so a backlog streams without pause. Received messages are handed over after
# every ``_FRAMES_PER_READ`` frames or ``_SOCKET_TIMEOUT_SECONDS`` of silence, whichever comes first:
# at 250 events/s a partition's events wait at most 64 ms in the receiver.
_PREFETCH = 300
_FRAMES_PER_READ = 16
_SOCKET_TIMEOUT_SECONDS = 0.05
# What a stream holds received while nobody reads. Spark gives a partition's next task to whichever
# Python worker is idle longest, so a worker's stream often comes back to use several batches later:
# it must still hold those events then (reading them again from the broker costs more than keeping
# them), and the bound stops the receiver before it holds the whole backlog.
_BUFFERED_EVENTS = 4096
_BUFFERED_BYTES = 8 * 1024 * 1024  # event bodies; the bound for large events
_IDLE_WAIT_SECONDS = 1.0  # how long a one-off read waits before reporting "nothing new"
_MAX_SKIP = 5_000  # a kept stream further behind than this is reopened rather than read forward
_IDLE_CLOSE_SECONDS = 30.0
_REAP_EVERY_SECONDS = 5.0

_SEQUENCE_NUMBER = b"x-opt-sequence-number"

StreamKey = tuple[str, str, str, str]  # connection option, event hub, consumer group, partition


def sequence_number(message: Any) -> int:
    """The sequence number of a received message (an SDK ``Message``)."""
    return int(message.message_annotations[_SEQUENCE_NUMBER])


class PartitionStream:
    """Events of one partition in sequence order, from ``position`` (a sequence number: the events
    after it; a datetime: those enqueued from then on, or after it unless ``inclusive``)."""

    def __init__(
        self,
        connection: Connection,
        event_hub: str,
        consumer_group: str,
        partition: str,
        position: int | datetime | None,
        *,
        inclusive: bool = False,
        prefetch: int = _PREFETCH,
        endpoint: Endpoint | None = None,
    ) -> None:
        self.key: StreamKey = (connection.to_option(), event_hub, consumer_group, partition)
        self.endpoint = endpoint or Endpoint("source", event_hub)
        # The sequence number of the last message handed out (None: unknown until the first).
        self.position = position if isinstance(position, int) else None
        self.last_used = time.monotonic()
        self.broken = False  # the receiver reported an error: nothing after it is handed out
        self.reconnecting = False  # the namespace is unavailable: the receiver is trying again
        self._pending: list[Any] = []  # received, not yet handed out
        self._buffer = _HandOvers()
        self._closed = threading.Event()
        self._prefetch = prefetch
        self._consumer: Any = None  # the SDK partition consumer the thread drives now
        self._client = eventhub_consumer(connection, event_hub, consumer_group)
        # What the client's public ``socket_timeout`` keyword sets; ``eventhub_consumer`` takes no
        # client options, so it is set before the first receive creates the connection.
        self._client._config.socket_timeout = _SOCKET_TIMEOUT_SECONDS
        self._thread = threading.Thread(
            target=self._receive,
            args=(consumer_group, partition, position if position is not None else "-1", inclusive),
            daemon=True,
            name=f"eventhubs-receive-{event_hub}-{partition}",
        )
        self._thread.start()

    def _receive(
        self, consumer_group: str, partition: str, position: int | str | datetime, inclusive: bool
    ) -> None:
        """The receiver thread: what ``EventHubConsumer.receive`` does, handing over raw messages."""
        # Imported by the first receiver: it imports the SDK (7 MB a process), which the processes that
        # plan and checkpoint reads and never receive (read tasks, a query's start) need not hold.
        from federator_spark.sources import eventhubs_frames

        backoff = Backoff()
        try:
            while not self._closed.is_set():
                consumer = self._consumer = self._client._create_consumer(
                    consumer_group,
                    partition,
                    position,
                    on_event_received=None,
                    prefetch=self._prefetch,
                    event_position_inclusive=inclusive,
                )
                # The SDK gives a consumer a keep-alive thread that sleeps in 1 s steps and that closing
                # joins: up to a second per close. A receiver pulling all the time needs none.
                consumer._keep_alive = None
                transport = None  # its socket: see _close
                try:
                    while not self._closed.is_set():
                        if consumer._open():
                            if transport is None:
                                transport = consumer._handler._connection._transport
                                eventhubs_frames.install(transport)
                                eventhubs_frames.read_transfers(consumer._handler._connection)
                            link = consumer._handler._link
                            if link.current_link_credit <= self._prefetch // 2:
                                link.flow(link_credit=self._prefetch)
                            consumer._handler.do_work(batch=min(self._prefetch, _FRAMES_PER_READ))
                            # The SDK's link keeps every delivery's tag until a disposition settles it,
                            # and sends none for Event Hubs events: a kept receiver would hold one tag
                            # per event it ever received.
                            link._received_delivery_tags.clear()
                            self._recovered(backoff)
                        if consumer._message_buffer:
                            messages = list(consumer._message_buffer)
                            consumer._message_buffer.clear()
                            position, inclusive = sequence_number(messages[-1]), False
                            self._hand_over(messages)
                except Exception as error:
                    if self._closed.is_set():
                        return
                    reported = _sdk_error(consumer, error)
                    try:
                        failure(reported, self.endpoint, f"receiving {self.key[1]}/{partition}")
                    except BaseException as fatal:  # a refusal, or not the broker's failure
                        self._hand_over(fatal if isinstance(fatal, EndpointRefusedError) else reported)
                        return
                    self.reconnecting = True
                    delay = backoff.next()
                    logger.warning(
                        "partition %s: %s; reopening after %s in %.1f s",
                        partition,
                        words(reported),
                        position,
                        delay,
                    )
                    self._closed.wait(delay)
                finally:
                    _close(consumer, transport)
        finally:
            self._client.close()

    def _recovered(self, backoff: Backoff) -> None:
        if self.reconnecting:
            self.reconnecting = False
            backoff.reset()
            self.endpoint.available()
            logger.info("partition %s: receiving again", self.key[3])

    def _hand_over(self, item: list[Any] | BaseException) -> None:
        if isinstance(item, BaseException):
            self.broken = True
        # Blocking here while the buffer is full is the flow control: no receive, no new link credit.
        self._buffer.put(item, self._closed)

    def next_events(self, wait: float) -> list[Any]:
        """The next events in order, waiting up to ``wait`` seconds for some ([] if none came)."""
        if self._pending:
            events, self._pending = self._pending, []
        else:
            item = self._buffer.get(wait)
            if item is None:
                return []
            if isinstance(item, BaseException):
                raise item
            events = item
        self.position = sequence_number(events[-1])
        self.last_used = time.monotonic()
        return events

    def read_range(self, after: int, until: int, timeout: float) -> Iterator[list[Any]]:
        """The events with ``after < sequence number <= until``, in batches; events beyond ``until``
        stay for the next call. Raises TimeoutError when none arrives for ``timeout`` seconds."""
        if until <= after:
            return
        idle_since = time.monotonic()
        while True:
            events = self.next_events(min(_IDLE_WAIT_SECONDS, timeout))
            if not events:
                if self.reconnecting:  # an outage, reported as such: waiting is all there is to do
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > timeout:
                    raise TimeoutError(f"partition {self.key[3]}: expected events did not arrive")
                continue
            idle_since = time.monotonic()
            if sequence_number(events[-1]) > until:
                keep_from = next(i for i, e in enumerate(events) if sequence_number(e) > until)
                events, self._pending = events[:keep_from], events[keep_from:]
                self.position = until
            wanted = (
                [e for e in events if sequence_number(e) > after]
                if sequence_number(events[0]) <= after
                else events
            )
            if wanted:
                yield wanted
            if self.position is not None and self.position >= until:
                return

    def close(self, wait: bool = False) -> None:
        """Ends the receive loop; the thread then closes the link and the connection, which ``wait``
        waits for."""
        self._closed.set()
        if wait:
            self._thread.join(10)


class _HandOvers:
    """The receiver thread's hand-overs, oldest first, bounded by :data:`_BUFFERED_EVENTS` and
    :data:`_BUFFERED_BYTES` (a hand-over is always taken when the buffer is empty, however large)."""

    def __init__(self) -> None:
        self._items: deque[tuple[list[Any] | BaseException, int, int]] = deque()
        self._events = 0
        self._bytes = 0
        self._changed = threading.Condition()

    def put(self, item: list[Any] | BaseException, closed: threading.Event) -> None:
        """Wait for room, unless ``closed`` is set (then drop ``item``: nobody will read it)."""
        events, size = (0, 0) if isinstance(item, BaseException) else (len(item), _body_bytes(item))
        with self._changed:
            while self._items and (self._events >= _BUFFERED_EVENTS or self._bytes >= _BUFFERED_BYTES):
                if closed.is_set():
                    return
                self._changed.wait(0.5)
            self._items.append((item, events, size))
            self._events += events
            self._bytes += size
            self._changed.notify_all()

    def get(self, timeout: float) -> list[Any] | BaseException | None:
        """The oldest hand-over, waiting up to ``timeout`` seconds for one (None if none came)."""
        with self._changed:
            if not self._items and not self._changed.wait_for(lambda: bool(self._items), timeout):
                return None
            item, events, size = self._items.popleft()
            self._events -= events
            self._bytes -= size
            self._changed.notify_all()
            return item


def _body_bytes(messages: list[Any]) -> int:
    """The size of received messages' data sections (what dominates a held message's memory)."""
    return sum(sum(map(len, m.data)) if m.data else 0 for m in messages)


def _close(consumer: Any, transport: Any) -> None:
    """Close an SDK partition consumer and the transport (socket) of its connection: once a read
    fails, the SDK marks the connection ended and drops it without closing the socket."""
    consumer.close()
    if transport is not None:
        transport.close()


def _sdk_error(consumer: Any, error: Exception) -> BaseException:
    """``error`` as the SDK's own receive would report it (an ``EventHubError``, with the broker's words)."""
    try:
        return consumer._handle_exception(error, is_consumer=True)  # type: ignore[no-any-return]
    except BaseException as raised:  # it raises what is already an EventHubError
        return raised


def receive(
    connection: Connection,
    event_hub: str,
    consumer_group: str,
    partition: str,
    position: int | datetime | None,
    *,
    inclusive: bool,
    timeout: float,
    expected: int = _PREFETCH,
    endpoint: Endpoint | None = None,
) -> Iterator[list[Any]]:
    """A one-off read: batches of events from ``position``; an empty batch means nothing arrived for
    a second. ``expected`` (how many events the caller wants at most) bounds the prefetch. Raises
    TimeoutError after ``timeout`` seconds without any event. The receiver closes when the caller
    stops iterating."""
    stream = PartitionStream(
        connection,
        event_hub,
        consumer_group,
        partition,
        position,
        inclusive=inclusive,
        prefetch=max(1, min(_PREFETCH, expected)),
        endpoint=endpoint,
    )
    idle_since = time.monotonic()
    try:
        while True:
            events = stream.next_events(_IDLE_WAIT_SECONDS)
            if events or stream.reconnecting:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > timeout:
                raise TimeoutError(f"no events from partition {partition} for {timeout}s")
            yield events
    finally:
        stream.close()


# -------------------------------------------------------------------------- streams kept by a worker

_kept: dict[StreamKey, PartitionStream] = {}
_kept_lock = threading.Lock()
_reaper: threading.Thread | None = None


def take(
    connection: Connection,
    event_hub: str,
    consumer_group: str,
    partition: str,
    after: int,
    endpoint: Endpoint | None = None,
) -> PartitionStream:
    """A stream that continues after sequence number ``after``: this worker's kept one when it can
    get there by reading forward, else a new one. Give it back with :func:`keep` when done."""
    with _kept_lock:
        stream = _kept.pop((connection.to_option(), event_hub, consumer_group, partition), None)
    if stream is not None:
        if not stream.broken and stream.position is not None and 0 <= after - stream.position <= _MAX_SKIP:
            return stream
        logger.debug(
            "%s/%s: kept stream at %s cannot continue after %s; reopening",
            event_hub,
            partition,
            stream.position,
            after,
        )
        stream.close()
    return PartitionStream(connection, event_hub, consumer_group, partition, after, endpoint=endpoint)


def keep(stream: PartitionStream) -> None:
    """Keep ``stream`` open for this worker's next task on its partition."""
    global _reaper
    stream.last_used = time.monotonic()
    with _kept_lock:
        _kept[stream.key] = stream
        if _reaper is None:
            # A worker may run only write tasks for a while: closing idle streams cannot wait for reads.
            _reaper = threading.Thread(target=_close_idle_streams, daemon=True, name="eventhubs-reaper")
            _reaper.start()


def _close_idle_streams() -> None:
    while True:
        time.sleep(_REAP_EVERY_SECONDS)
        now = time.monotonic()
        with _kept_lock:
            idle = [k for k, s in _kept.items() if s.broken or now - s.last_used > _IDLE_CLOSE_SECONDS]
            closing = [_kept.pop(key) for key in idle]
        for stream in closing:
            stream.close(wait=True)  # nobody waits for this thread
