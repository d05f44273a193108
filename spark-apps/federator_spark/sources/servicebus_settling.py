"""Settling what the Service Bus source's driver received (``sources/servicebus_driver.py``): a message is
completed at the source only once Spark's commit log shows its batch committed, the locks of the others are
renewed meanwhile, and a newer run of the query is handed the source (design: ``docs/servicebus-source.md``).

The commit log is checked on every ``latestOffset`` call and, while messages are held, every second by a
settler thread, which also renews their locks. ``reader.commit`` is not used: Spark calls it a batch late,
and never while idle.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from federator_spark.sources.servicebus_sdk import complete_together, keeping_arrivals
from federator_spark.sources.servicebus_settings import SourceSettings
from federator_spark.sources.spool import Ledger, Record, Spool, committed_position

logger = logging.getLogger(__name__)

_SETTLE_INTERVAL_SECONDS = 1.0
# Assumed until a received message tells the entity's lock duration: Service Bus's longest, so nothing
# expected back is forgotten too early.
DEFAULT_LOCK_SPAN_SECONDS = 300.0
_COMPLETE_AT_ONCE = 500  # lock tokens per management request
# Identifies this process: the driver-side runner that holds the receiver for one run of a query.
RUN_ID = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class Settling:
    """The settling half of :class:`~federator_spark.sources.servicebus_driver.SourceDriver`: the state it
    shares with the receiving half is declared here, and set by the driver."""

    settings: SourceSettings
    spool: Spool
    ledger: Ledger
    lock: threading.RLock
    held: dict[int, Any]
    """Received messages whose locks we keep until their batch is committed, by sequence number."""
    ahead: dict[int, Any] | None
    records: dict[int, Record]
    lock_span: float | None
    last_call: float
    handed_over: bool
    _asking: threading.Event
    _settler: threading.Thread | None
    _receiver: Any
    _client: Any

    def receiver(self) -> Any:
        """The receiver, opened on first use (the driver's)."""
        raise NotImplementedError

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
        half_span = (self.lock_span or DEFAULT_LOCK_SPAN_SECONDS) / 2
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
                if self.spool.owner() != RUN_ID:
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
