"""Stream reader for a Service Bus queue, topic subscription, or one of their dead-letter sub-queues.

Service Bus cannot replay, so the driver turns the entity into a log (design and crash walk-through:
``docs/servicebus-source.md``):

1. ``latestOffset`` receives up to the batch limit with a peek-lock receiver held by the driver,
   writes the new messages to spool file *n* (atomically) and only then returns ``{"spool": n}``.
2. Executors read the batch from the spool file, never from the broker, so a replayed batch is the
   same messages in the same order.
3. A message is completed at the source only after Spark's commit log shows its batch committed,
   i.e. after the sink's commit (every target accepted the batch). The commit log is checked on every
   ``latestOffset`` call and, while messages are held, every second by a settler thread that also
   renews their locks. ``reader.commit`` is not used: Spark calls it a batch late, and never while idle.
4. A message redelivered after a crash is recognised by its sequence number: completed at once if its
   batch is committed, held (not spooled again) if its batch is spooled but not committed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from federator_spark import logs, worker_gc
from federator_spark.connections import servicebus_client
from federator_spark.outages import Backoff, Endpoint, failure, words
from federator_spark.sources.servicebus_records import enqueued, to_record, to_row
from federator_spark.sources.servicebus_sdk import (
    complete_together,
    keep_alive_in_turn,
    keeping_arrivals,
    kept,
)
from federator_spark.sources.servicebus_settings import SourceSettings
from federator_spark.sources.spool import (
    SPOOL_KEY,
    Disposition,
    Ledger,
    Record,
    Spool,
    committed_position,
    offset,
    read_spool_file,
)

logger = logging.getLogger(__name__)

_SETTLE_INTERVAL_SECONDS = 1.0
_FURTHER_WAIT_SECONDS = 0.2  # after the first receive of a batch: only what is already flowing
# How long the SDK goes on gathering once a receive's first message arrived (its default 0.2 s): a batch
# waits for it before Spark starts it, while whatever arrives meanwhile waits for the next batch anyway.
# At 500 messages/s on an all-active pair it was 0.2 s of every 0.8 s cycle.
_GATHER_SECONDS = 0.05
# Assumed until a received message tells the entity's lock duration: Service Bus's longest, so nothing
# expected back is forgotten too early.
_DEFAULT_LOCK_SPAN_SECONDS = 300.0
_COMPLETE_AT_ONCE = 500  # lock tokens per management request
# What one batch may hold in the driver, the spool file and a write task, whatever ``maxMessagesPerBatch``
# allows: message bodies as spooled (base64). The default 1,000 messages of 256 KB (the standard tier's
# largest) would be 340 MB; a batch always takes its first message, so a premium tier's 100 MB one goes.
BATCH_BYTES = 64 * 1024 * 1024
# Identifies this process: the driver-side runner that holds the receiver for one run of a query.
_RUN_ID = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class SpoolPartition(InputPartition):
    def __init__(self, number: int, path: str) -> None:
        super().__init__((number, path))
        self.number = number
        self.path = path


class ServiceBusStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Reads what :class:`SourceSettings` names. As the ``servicebus`` data source, from the options
    ``connection`` (JSON, see :class:`~federator_spark.connections.Connection`), ``queueName`` |
    ``topicName`` + ``subscriptionName``, ``subQueue`` (``none`` | ``deadLetter``),
    ``maxMessagesPerBatch`` (default 1000), ``checkpointLocation`` (**required**, the query's own: spool
    files live under it and Spark's commit log there decides completion), ``receiveWaitSeconds`` (how
    long an idle poll waits, default 1), ``maxLockRenewalSeconds`` (how long locks are renewed without
    any call from Spark, default 600), ``statusFile`` (where an outage of the namespace is reported while
    it is retried).
    """

    def __init__(self, settings: SourceSettings) -> None:
        logs.configure()  # the driver's source process
        self.settings = settings

    # ------------------------------------------------------------------------------------ driver side

    def _driver(self) -> SourceDriver:
        return driver_for(self.settings)

    def initialOffset(self) -> dict[str, int]:
        return offset(0)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.settings.max_messages)

    def prepareForTriggerAvailableNow(self) -> None:
        self._driver().prepare_available_now()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        wanted = self.settings.max_messages
        if isinstance(limit, ReadMaxRows):
            wanted = min(wanted, limit.max_rows)
        return offset(self._driver().latest(int(start[SPOOL_KEY]), wanted))

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        # Only the spool's paths: planning must not start a driver (which claims the source).
        spool = Spool(self.settings.spool_dir)
        return [
            SpoolPartition(n, str(spool.path(n))) for n in range(start[SPOOL_KEY] + 1, end[SPOOL_KEY] + 1)
        ]

    def commit(self, end: dict[str, int]) -> None:
        """Not used: Spark calls it one batch late and never while idle, so completion follows Spark's
        commit log instead (see :meth:`SourceDriver.settle`)."""

    # ------------------------------------------------------------------------------------ executor side

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, SpoolPartition)
        logs.configure()  # an executor's Python worker
        worker_gc.freeze_loaded()
        source, records = read_spool_file(Path(partition.path))
        for record in records:
            yield to_row(record, source)


# ---------------------------------------------------------------------------------------- the driver

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


class SourceDriver:
    def __init__(self, settings: SourceSettings) -> None:
        self.settings = settings
        self.spool = Spool(settings.spool_dir)
        # A newer run of the query takes over: the previous run's settler sees this and lets go.
        self.spool.claim(_RUN_ID)
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
        self._polled_receiver: Any = None  # the receiver whose link a receive call has opened
        self._source: str | None = None
        self._settler: threading.Thread | None = None
        self.endpoint = Endpoint("source", settings.queue or settings.topic or "source", settings.status_file)
        self._outage = Backoff()
        self._next_receive = 0.0  # time.monotonic() before which an unavailable namespace is not asked

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
        return self._receiver

    # ---------------------------------------------------------------------------------------- batches

    def latest(self, start: int, wanted: int) -> int:
        self._asking.set()
        try:
            return self._next_batch(start, wanted)
        finally:
            self._asking.clear()

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
        return self.spool.owner() == _RUN_ID

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
            if new:
                made = [records[m.sequence_number] or to_record(m) for m in new]  # each made on arrival
                self.ledger.append(start + 1, self.source, made)
                self.held.update((m.sequence_number, m) for m in new)
            if self.held:
                self._ensure_settler()
            if not new:
                return start
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
        received: list[Any] = []
        started = time.monotonic()
        wait = self.settings.wait_seconds
        drained = False
        size = 0
        while len(received) < wanted and size < BATCH_BYTES and not (until is not None and until.is_set()):
            asked = wanted - len(received)
            whole_poll = not received  # this call waits the whole receiveWaitSeconds, later ones a gather
            opening = self._polled_receiver is not receiver
            self._polled_receiver = receiver
            # Messages kept from between calls are there now: only a gather for more (see ``kept``).
            batch = receiver.receive_messages(
                max_message_count=asked, max_wait_time=_GATHER_SECONDS if kept(receiver) else wait
            )
            if opening and not batch:
                # The receiver's first call opens its link, out of the same wait: on a busy host that took
                # all of it, and an availableNow run ended with 0 of 20,000 messages. Poll again.
                continue
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
            if time.monotonic() - started > (self.lock_span or _DEFAULT_LOCK_SPAN_SECONDS) / 4:
                break
            if received:
                wait = _FURTHER_WAIT_SECONDS if until is None else _GATHER_SECONDS
        if drained:
            # Anything we still expected back would have been redelivered by now.
            span = self.lock_span or _DEFAULT_LOCK_SPAN_SECONDS
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

    # --------------------------------------------------------------------------------------- settling

    def settle(self) -> int:
        """Complete the held messages of committed batches, renew the other locks; returns the committed
        spool position."""
        with self.lock:
            committed = committed_position(self.settings.checkpoint)
            self.ledger.fold(committed)
            due = [self.held.pop(seq) for seq in list(self.held) if seq in self.ledger.completing]
            if due:
                self._complete(due)
            self._renew()
            return committed

    def _complete(self, messages: list[Any]) -> None:
        """Complete ``messages`` at the source: all at once, as one management request per
        ``_COMPLETE_AT_ONCE`` (completing one by one over the receiver link waits a round trip for each
        outcome); one by one when that is refused (a lock lost among them, a namespace that does not
        take it)."""
        from azure.servicebus.exceptions import MessageAlreadySettled, MessageLockLostError, ServiceBusError

        done: list[int] = []
        receiver = self.receiver()
        with keeping_arrivals(receiver):
            singly: list[Any] = []
            for first in range(0, len(messages), _COMPLETE_AT_ONCE):
                chunk = messages[first : first + _COMPLETE_AT_ONCE]
                if len(chunk) > 1 and complete_together(receiver, chunk):
                    done.extend(m.sequence_number for m in chunk)
                else:
                    singly.extend(chunk)
            for message in singly:
                seq = message.sequence_number
                try:
                    receiver.complete_message(message)
                    done.append(seq)
                except (MessageLockLostError, MessageAlreadySettled):
                    pass  # stays expected: completed when it is redelivered
                except ServiceBusError as error:
                    logger.warning("servicebus: completing message %d failed (%s), retrying", seq, error)
                    self.held[seq] = message
        self.ledger.completed(done)

    def _renew(self) -> None:
        from azure.servicebus.exceptions import MessageLockLostError, ServiceBusError

        now = datetime.now(UTC)
        half_span = (self.lock_span or _DEFAULT_LOCK_SPAN_SECONDS) / 2
        due = [
            (messages, seq, message)
            for messages in self._locked()
            for seq, message in list(messages.items())
            if message.locked_until_utc is None
            or (message.locked_until_utc - now).total_seconds() <= half_span
        ]
        if not due:
            return
        receiver = self.receiver()
        with keeping_arrivals(receiver):
            for messages, seq, message in due:
                try:
                    receiver.renew_message_lock(message)
                except MessageLockLostError:
                    del messages[seq]  # redelivered later, and held (or received) again then
                    self.records.pop(seq, None)  # an ahead one's record (it may never come back)
                except ServiceBusError as error:
                    logger.warning("servicebus: renewing the lock of message %d failed (%s)", seq, error)

    def _locked(self) -> list[dict[int, Any]]:
        """The messages whose locks we keep: the held ones, and those received ahead."""
        return [self.held, self.ahead] if self.ahead else [self.held]

    def _ensure_settler(self) -> None:
        if self._settler is None or not self._settler.is_alive():
            self._settler = threading.Thread(target=self._settle_loop, daemon=True, name="servicebus-settler")
            self._settler.start()

    def _settle_loop(self) -> None:
        """Runs while messages are locked. Stops when a newer run took over (it lets the messages go),
        or when Spark has not called for ``maxLockRenewalSeconds`` (the locks then lapse)."""
        while True:
            time.sleep(_SETTLE_INTERVAL_SECONDS)
            with self.lock:
                if self._asking.is_set():
                    continue
                if self.spool.owner() != _RUN_ID:
                    self._hand_over()
                    return
                locked = sum(map(len, self._locked()))
                if not locked:
                    return
                if time.monotonic() - self.last_call > self.settings.max_lock_renewal_seconds:
                    logger.warning("servicebus: no call from Spark for a while, %d locks lapse", locked)
                    return
                try:
                    self.settle()
                except Exception:  # the settler must survive a broker or disk hiccup; next tick retries
                    logger.exception("servicebus: settling failed")

    def _hand_over(self) -> None:
        """A newer run owns the source: give our locked messages back at once (abandon) so it can take
        them, instead of holding them until their locks lapse."""
        from azure.servicebus.exceptions import ServiceBusError

        self.handed_over = True
        for messages in self._locked():
            for message in messages.values():
                with contextlib.suppress(ServiceBusError, ValueError):  # if it fails, the lock lapses instead
                    self._receiver.abandon_message(message)
        self.held.clear()
        self.ahead = None
        self.records.clear()
        logger.info("servicebus %s: a newer run took over", self.settings.entity_path)
        if self._receiver is not None:
            try:
                self._receiver.close()
                self._client.close()
            except Exception:  # closing a receiver whose connection is gone
                logger.debug("servicebus: closing after the hand-over failed", exc_info=True)
