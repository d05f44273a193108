"""The Service Bus source's driver-side state, kept for the run of a query in the source runner's process:
``latestOffset`` receives up to the batch limit with a peek-lock receiver, writes the new messages to the
next spool file and only then returns its position (design and crash walk-through:
``docs/servicebus-source.md``). Settling what was received is ``servicebus_settling``'s half of the driver.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from federator_spark.connections import servicebus_client
from federator_spark.outages import Backoff, Endpoint, failure, words
from federator_spark.sources.servicebus_records import enqueued, to_record
from federator_spark.sources.servicebus_sdk import keep_alive_in_turn, kept
from federator_spark.sources.servicebus_settings import SourceSettings
from federator_spark.sources.servicebus_settling import DEFAULT_LOCK_SPAN_SECONDS, RUN_ID, Settling
from federator_spark.sources.spool import Disposition, Ledger, Record, Spool

logger = logging.getLogger(__name__)

_FURTHER_WAIT_SECONDS = 0.2  # after the first receive of a batch: only what is already flowing
# How long the SDK goes on gathering once a receive's first message arrived (its default 0.2 s): a batch
# waits for it before Spark starts it, while whatever arrives meanwhile waits for the next batch anyway.
# At 500 messages/s on an all-active pair it was 0.2 s of every 0.8 s cycle.
_GATHER_SECONDS = 0.05
# What one batch may hold in the driver, the spool file and a write task, whatever ``maxMessagesPerBatch``
# allows: message bodies as spooled (base64). The default 1,000 messages of 256 KB (the standard tier's
# largest) would be 340 MB; a batch always takes its first message, so a premium tier's 100 MB one goes.
BATCH_BYTES = 64 * 1024 * 1024
# What a new link may take to open (the receive wait when that is longer), before its first receive: the
# SDK's receive gives the opening no more than its own wait and closes the link when that passes, so on a
# loaded host every cold poll of a short wait missed. A link not open in time is an outage: reported,
# and tried again with a new receiver after the outage's pause.
LINK_OPEN_SECONDS = 30.0

_DRIVERS: dict[Path, SourceDriver] = {}
_DRIVERS_LOCK = threading.Lock()


def driver_for(settings: SourceSettings) -> SourceDriver:
    """The process's driver state for a source: the runner calls every driver-side method of the
    reader in one long-lived process, so the receiver and its locks live here, not in the (pickled)
    reader."""
    with _DRIVERS_LOCK:
        driver = _DRIVERS.get(settings.spool_dir)
        if driver is None or driver.handed_over:
            driver = _DRIVERS[settings.spool_dir] = SourceDriver(settings)
        driver.touch()
        return driver


def _closing_its_socket(receiver: Any) -> None:
    """Make ``receiver`` close its connection's socket whenever it drops its AMQP handler (a link that did
    not open in time, a broken connection, ``close``). azure-servicebus 7.15 leaves the socket open when
    the connection's opening failed (the handler's close returns before any session exists) and when the
    connection failed while closing (marked ended first, so its transport is skipped): it lingered until
    a garbage collection, one per failed opening."""
    close_handler = receiver._close_handler

    def close_handler_and_socket() -> None:
        handler = receiver._handler
        connection = None if getattr(handler, "_external_connection", True) else handler._connection
        try:
            close_handler()
        finally:
            transport = getattr(connection, "_transport", None)
            if transport is not None:
                transport.close()  # does nothing on a closed one

    receiver._close_handler = close_handler_and_socket


class SourceDriver(Settling):
    """One run's receiver, spool and ledger of a source: batches are made here, settled by
    :class:`Settling`."""

    def __init__(self, settings: SourceSettings) -> None:
        self.settings = settings
        self.spool = Spool(settings.spool_dir)
        # A newer run of the query takes over: the previous run's settler sees this and lets go.
        self.spool.claim(RUN_ID)
        self.ledger = Ledger(self.spool)
        self.lock = threading.RLock()
        # Received messages whose locks we keep until their batch is committed, by sequence number.
        self.held: dict[int, Any] = {}
        # Received ahead for the next batch while Spark writes this one, in arrival order, not spooled yet
        # (None: nothing was).
        self.ahead: dict[int, Any] | None = None
        # What the spool will keep of each received message not spooled yet, by sequence number: made as
        # it arrives, so receiving ahead also takes this work off the next batch's ``latestOffset``.
        self.records: dict[int, Record] = {}
        self._ahead_thread: threading.Thread | None = None
        self._batch_wanted = threading.Event()  # Spark asks for the next batch: stop receiving ahead
        # Set while Spark waits in ``latest``, which settles first thing: the settler, waking meanwhile,
        # leaves the lock to it (it had taken it first, once for ~1 s, in every second batch or so).
        self._asking = threading.Event()
        self.lock_span: float | None = None
        self.last_call = time.monotonic()
        self.available_now_since: datetime | None = None
        self.reached_present = False
        self.handed_over = False
        self._client: Any = None
        self._receiver: Any = None
        self._source: str | None = None
        self._settler: threading.Thread | None = None
        self.endpoint = Endpoint("source", settings.queue or settings.topic or "source", settings.status_file)
        self._outage = Backoff()
        self._next_receive = 0.0  # time.monotonic() before which an unavailable namespace is not asked
        # A run of a source that follows a FailoverGroup makes a batch once its member answers, empty if
        # nothing came: the group times a follower's arrival by its first batch on the member, and Spark
        # makes none of its own for an idle entity whose checkpoint has one (a member the task read before).
        self.arrival_due = settings.layout.member is not None

    def touch(self) -> None:
        self.last_call = time.monotonic()

    def prepare_available_now(self) -> None:
        """``availableNow`` reads what is there now: it stops after a receive that left the entity
        empty, or that brought a message enqueued after this moment (so a busy entity cannot keep the
        run going forever)."""
        self.available_now_since = datetime.now(UTC)
        self.reached_present = False

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = f"{self.settings.connection.host}/{self.settings.entity_path}"
        return self._source

    def receiver(self) -> Any:
        if self._receiver is None:
            from azure.servicebus import ServiceBusReceiveMode, ServiceBusSubQueue

            settings = self.settings
            self._client = servicebus_client(settings.connection)
            common: dict[str, Any] = {
                "receive_mode": ServiceBusReceiveMode.PEEK_LOCK,
                "prefetch_count": 0,  # only what a batch asks for gets locked
                "sub_queue": ServiceBusSubQueue.DEAD_LETTER if settings.dead_letter else None,
            }
            if settings.queue is not None:
                self._receiver = self._client.get_queue_receiver(settings.queue, **common)
            else:
                self._receiver = self._client.get_subscription_receiver(
                    settings.topic, settings.subscription, **common
                )
            if hasattr(self._receiver, "_further_pull_receive_timeout"):  # the SDK's, not an option
                self._receiver._further_pull_receive_timeout = _GATHER_SECONDS
            keep_alive_in_turn(self._receiver, self.lock)
            _closing_its_socket(self._receiver)
        return self._receiver

    def _open_link(self, receiver: Any) -> None:
        """Open ``receiver``'s link, if it is not open, within :data:`LINK_OPEN_SECONDS`. azure-servicebus
        7.15 bounds an opening only through its private ``_open``: the public one (``with receiver``) is
        bounded per attempt by the client's ``try_timeout`` alone, and unbounded without it. A link that
        is open returns at once."""
        receiver._open(timeout=max(LINK_OPEN_SECONDS, self.settings.wait_seconds))

    # ---------------------------------------------------------------------------------------- batches

    def latest(self, start: int, wanted: int) -> int:
        self._asking.set()
        try:
            end = self._next_batch(start, wanted)
        finally:
            self._asking.clear()
        if end > start:
            self.arrival_due = False
        return end

    def _next_batch(self, start: int, wanted: int) -> int:
        self._stop_receiving_ahead()
        while True:
            end = self._batch_after(start, wanted)
            # Spark ends an availableNow run at the first call without a batch: until the run has reached
            # what was there when it started, no batch (the namespace unavailable, a link that did not open
            # in time, a receive of redeliveries only) means ask the source again, not the end.
            if end > start or not self._catching_up():
                return end

    def _catching_up(self) -> bool:
        """An availableNow run that has not reached the present, in a run that still owns the source (the
        settler, which notices a newer run, leaves the lock to Spark meanwhile)."""
        if self.available_now_since is None or self.reached_present or self.handed_over:
            return False
        return self.spool.owner() == RUN_ID

    def _batch_after(self, start: int, wanted: int) -> int:
        """The batch after ``start``: the spool position it ends at, ``start`` when there is none now."""
        with self.lock:
            committed = self.settle()
            if committed < start:
                raise RuntimeError(
                    f"Spark's commit log at {self.settings.checkpoint} is behind the source offset "
                    f"(spool {committed} < {start}): the reader's checkpointLocation must be the query's"
                )
            if self.ledger.pending_after(start):
                # Spooled before a crash, before Spark logged the batch: that file is the next batch.
                return start + 1
            if self.ahead is None:
                if self.available_now_since is not None and self.reached_present:
                    return start
                fresh = self._receive_while_available(wanted)
                if fresh is None:
                    return start  # unavailable: no batch, Spark asks again
                self.ahead = {m.sequence_number: m for m in fresh}
            received = self._take_ahead(wanted)  # what fits in a batch; the rest waits for the next
            records = {m.sequence_number: self.records.pop(m.sequence_number, None) for m in received}
            new = self._sort(received)
            if new or self.arrival_due:  # the member answered: an arrival's batch may be empty
                made = [records[m.sequence_number] or to_record(m) for m in new]  # each made on arrival
                self.ledger.append(start + 1, self.source, made)
                self.held.update((m.sequence_number, m) for m in new)
            if self.held:
                self._ensure_settler()
            if not new:
                return start + 1 if self.arrival_due else start
            logger.info(
                "servicebus %s: spooled %d messages as %d", self.settings.entity_path, len(new), start + 1
            )
            if not (self.available_now_since is not None and self.reached_present):
                self._receive_ahead(wanted)
            return start + 1

    # -------------------------------------------------------------------------------- receiving ahead

    def _receive_ahead(self, wanted: int) -> None:
        """Receive the next batch on a thread while Spark writes this one: ``latest`` then spools what
        arrived meanwhile instead of starting to receive, and under a backlog the receiving overlaps the
        writing. Only after a batch with messages: an idle source is polled by ``latest`` as before."""
        self._batch_wanted.clear()
        self._ahead_thread = threading.Thread(
            target=self._run_ahead, args=(wanted,), daemon=True, name="servicebus-receive-ahead"
        )
        self._ahead_thread.start()

    def _run_ahead(self, wanted: int) -> None:
        # Holds the lock throughout (the settler waits): the receive stops when Spark asks for the batch,
        # or after a quarter of the lock duration, so the held messages are renewed in time.
        with self.lock:
            if not self.handed_over:
                received = self._receive_while_available(wanted, until=self._batch_wanted)
                if received:  # else ``latest`` receives as usual (Spark may have asked before any receive)
                    # After what a smaller batch limit left (``_take_ahead``), in arrival order.
                    self.ahead = {**(self.ahead or {}), **{m.sequence_number: m for m in received}}
                    self._ensure_settler()  # renews their locks should Spark take long to ask

    def _stop_receiving_ahead(self) -> None:
        """Returns once the receive ahead, if one runs, has stopped (after the receive call in progress)."""
        thread, self._ahead_thread = self._ahead_thread, None
        if thread is not None:
            self._batch_wanted.set()
            thread.join()

    def _take_ahead(self, wanted: int) -> list[Any]:
        """What was received and not spooled yet, as much as one batch takes (:meth:`_within_budget`);
        the rest stays for the next batch."""
        assert self.ahead is not None
        messages = list(self.ahead.values())
        count = self._within_budget(messages, wanted)
        taken, rest = messages[:count], messages[count:]
        self.ahead = {m.sequence_number: m for m in rest} if rest else None
        return taken

    def _within_budget(self, messages: list[Any], wanted: int) -> int:
        """How many of ``messages`` (received, their records made) one batch takes: at most ``wanted``,
        and no more than :data:`BATCH_BYTES` of bodies unless it is the first."""
        size = 0
        for count, message in enumerate(messages[:wanted]):
            record = self.records.get(message.sequence_number)
            size += len(record["body"]) if record is not None else 0
            if size > BATCH_BYTES and count:
                return count
        return min(wanted, len(messages))

    def _receive_while_available(self, wanted: int, until: threading.Event | None = None) -> list[Any] | None:
        """:meth:`_receive`, or None while the namespace is unavailable (the outage is reported and the
        receiver opened again after a growing pause; only a refusal raises)."""
        if time.monotonic() < self._next_receive:
            time.sleep(min(1.0, self._next_receive - time.monotonic()))
            return None
        try:
            received = self._receive(wanted, until)
        except Exception as error:
            failure(error, self.endpoint, f"receiving from {self.settings.entity_path}")
            delay = self._outage.next()
            logger.warning(
                "servicebus %s: %s; trying again in %.1f s", self.settings.entity_path, words(error), delay
            )
            self._next_receive = time.monotonic() + delay
            self._reset_receiver()
            return None
        if self._outage.failures:
            self._outage.reset()
            self.endpoint.available()
            logger.info("servicebus %s: available again", self.settings.entity_path)
        return received

    def _reset_receiver(self) -> None:
        """Drop the receiver (its locks are gone with its link): the next receive opens a new one. The held
        messages come back when their locks lapse, and are recognised as spooled then."""
        receiver, client, self._receiver, self._client = self._receiver, self._client, None, None
        self.held.clear()
        self.ahead = None
        self.records.clear()
        for closing in (receiver, client):
            if closing is not None:
                with contextlib.suppress(Exception):
                    closing.close()

    def _receive(self, wanted: int, until: threading.Event | None = None) -> list[Any]:
        """Up to ``wanted`` messages or :data:`BATCH_BYTES` of bodies (the receive that crosses it is kept
        whole: a batch takes what fits, the rest waits for the next); stops early when the entity runs
        dry, when a receive brought fewer than asked (the SDK gathers for ``_GATHER_SECONDS`` after the
        first message: what it found is what was ready, and a batch now beats a fuller one later), or after
        a quarter of the lock duration, so the first messages are renewed (by the settler, which waits for
        this lock) in time.
        Receiving ahead (``until``: set when Spark asks for the batch), it goes on taking what arrives
        until then instead, a short wait at a time; only ``availableNow`` stops it on a dry entity."""
        receiver = self.receiver()
        self._open_link(receiver)
        received: list[Any] = []
        started = time.monotonic()
        wait = self.settings.wait_seconds
        drained = False
        size = 0
        while len(received) < wanted and size < BATCH_BYTES and not (until is not None and until.is_set()):
            asked = wanted - len(received)
            whole_poll = not received  # this call waits the whole receiveWaitSeconds, later ones a gather
            # Messages kept from between calls are there now: only a gather for more (see ``kept``).
            batch = receiver.receive_messages(
                max_message_count=asked, max_wait_time=_GATHER_SECONDS if kept(receiver) else wait
            )
            # Dry only if a whole poll found nothing: a short gather can end before a busy broker delivers
            # (it ended an availableNow run with 3,910 of 20,000 messages in a benchmark).
            drained = not batch and whole_poll
            if batch:
                self._learn_lock_span(batch[0])
                received.extend(batch)
                made = [to_record(m) for m in batch]
                self.records.update(zip((m.sequence_number for m in batch), made, strict=True))
                size += sum(len(record["body"]) for record in made)
            if self.available_now_since is not None and (
                drained or any(enqueued(m) >= self.available_now_since for m in batch)
            ):
                self.reached_present = True
            if self.reached_present or (until is None and (drained or len(batch) < asked)):
                break
            if time.monotonic() - started > (self.lock_span or DEFAULT_LOCK_SPAN_SECONDS) / 4:
                break
            if received:
                wait = _FURTHER_WAIT_SECONDS if until is None else _GATHER_SECONDS
        if drained:
            # Anything we still expected back would have been redelivered by now.
            span = self.lock_span or DEFAULT_LOCK_SPAN_SECONDS
            forgotten = self.ledger.prune(expected_by=time.monotonic() - 2 * span)
            if forgotten:
                logger.info("servicebus: %d completions no longer expected (settled or gone)", len(forgotten))
        return received

    def _learn_lock_span(self, message: Any) -> None:
        if message.locked_until_utc is not None:
            span = (message.locked_until_utc - datetime.now(UTC)).total_seconds()
            self.lock_span = max(span, 1.0)

    def _sort(self, received: list[Any]) -> list[Any]:
        """Redeliveries of spooled messages are completed or held; the rest is new."""
        new: list[Any] = []
        complete: list[Any] = []
        for message in received:
            disposition = self.ledger.classify(message.sequence_number)
            if disposition is Disposition.NEW:
                new.append(message)
            elif disposition is Disposition.HOLD:
                self.held[message.sequence_number] = message
            else:
                complete.append(message)
        if complete:
            self._complete(complete)
        redelivered = len(received) - len(new)
        if redelivered:
            logger.info("servicebus: %d redelivered messages were already spooled", redelivered)
        return new
