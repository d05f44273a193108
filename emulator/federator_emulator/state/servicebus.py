"""Service Bus state: queues, topics, subscriptions, dead-letter queues. No protocol here.

A receivable entity (queue, subscription, or either's dead-letter queue) holds messages
by sequence number, a heap of available ones, scheduled ones by time, and peek-locks by
token. Every change is journaled before the protocol layer acknowledges it.
"""

from __future__ import annotations

import enum
import heapq
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from federator_contract.emulatorconfig import QueueConfig, SubscriptionConfig
from federator_emulator.state.journal import Journal
from federator_emulator.state.sessions import SessionLock, SessionRegistry, SessionUnavailable

logger = logging.getLogger(__name__)
Clock = Callable[[], float]

MAX_DELIVERY_COUNT_REASON = "MaxDeliveryCountExceeded"
TTL_EXPIRED_REASON = "TTLExpiredException"


class MessageState(enum.IntEnum):
    ACTIVE = 0
    DEFERRED = 1
    SCHEDULED = 2


class LockLost(LookupError):
    """The lock token is unknown or its lock expired."""


class Inbound(Protocol):
    """A message as sent by a client, seen through what the broker needs from it."""

    payload: bytes
    message_id: str | None
    session_id: str | None
    ttl_seconds: float | None
    scheduled_at: float | None

    def sql_view(self) -> Any:
        """A new ``federator_contract.sql.SqlMessage`` of the message's properties (an action may change
        it)."""

    def rewritten(self, view: Any) -> Inbound:
        """The message re-encoded with the (action-modified) properties of ``view``."""


@dataclass(slots=True)
class SbMessage:
    sequence_number: int
    payload: bytes
    enqueued_time: float
    expires_at: float | None = None
    message_id: str | None = None
    session_id: str | None = None
    state: MessageState = MessageState.ACTIVE
    scheduled_at: float | None = None
    delivery_count: int = 0
    dead_letter_reason: str | None = None
    dead_letter_description: str | None = None
    dead_letter_source: str | None = None
    lock_token: uuid.UUID | None = None
    locked_until: float = 0.0


@dataclass
class DuplicateDetector:
    window_seconds: float
    seen: dict[str, float] = field(default_factory=dict)
    purged_at: float = 0.0

    def is_duplicate(self, message_id: str | None, now: float) -> bool:
        """Whether the id was seen within the window; records it otherwise."""
        if message_id is None:
            return False
        seen_at = self.seen.get(message_id)
        if seen_at is not None and now - seen_at < self.window_seconds:
            return True
        self.seen[message_id] = now
        return False

    def purge(self, now: float) -> None:
        """Forget ids older than the window; a full scan, so at most once a second."""
        if now - self.purged_at < 1.0:
            return
        self.purged_at = now
        self.seen = {mid: t for mid, t in self.seen.items() if now - t < self.window_seconds}


class ReceivableEntity:
    """Messages with peek-lock semantics; subclasses say how they are configured."""

    def __init__(
        self, path: str, journal: Journal, clock: Clock, dead_letter: ReceivableEntity | None
    ) -> None:
        self.path = path
        self.journal = journal
        self.clock = clock
        self.dead_letter = dead_letter
        self.messages: dict[int, SbMessage] = {}
        # Available sequence numbers per session (key None: entities without sessions).
        self._available: dict[str | None, list[int]] = {}
        self._scheduled: list[tuple[float, int]] = []
        self._locks: dict[uuid.UUID, int] = {}
        self._lock_expiry: list[tuple[float, uuid.UUID]] = []
        self._expiry: list[tuple[float, int]] = []
        self.next_sequence_number = 1
        self.sessions = SessionRegistry(path, journal, clock)
        # Called when messages may have become available (the protocol layer pumps links).
        self.listeners: list[Callable[[ReceivableEntity], None]] = []

    # Settings; a dead-letter queue never expires or dead-letters its messages.
    @property
    def lock_duration(self) -> float:
        raise NotImplementedError

    @property
    def max_delivery_count(self) -> int | None:
        raise NotImplementedError

    @property
    def default_ttl(self) -> float | None:
        raise NotImplementedError

    @property
    def dead_letter_on_expiry(self) -> bool:
        raise NotImplementedError

    @property
    def requires_session(self) -> bool:
        return False

    # -- sending ------------------------------------------------------------------------
    def enqueue(self, inbound: Inbound, sequence_number: int | None = None) -> SbMessage:
        now = self.clock()
        seq = sequence_number if sequence_number is not None else self.next_sequence_number
        ttls = [t for t in (inbound.ttl_seconds, self.default_ttl) if t]
        scheduled = inbound.scheduled_at if inbound.scheduled_at and inbound.scheduled_at > now else None
        start = scheduled or now
        message = SbMessage(
            sequence_number=seq,
            payload=inbound.payload,
            enqueued_time=now,
            expires_at=start + min(ttls) if ttls else None,
            message_id=inbound.message_id,
            session_id=inbound.session_id,
            state=MessageState.SCHEDULED if scheduled else MessageState.ACTIVE,
            scheduled_at=scheduled,
        )
        self._store(message)
        self.notify()
        return message

    def _store(self, message: SbMessage) -> None:
        self.journal.write(
            {
                "k": "enq",
                "e": self.path,
                "s": message.sequence_number,
                "t": message.enqueued_time,
                "x": message.expires_at,
                "m": message.message_id,
                "sid": message.session_id,
                "st": int(message.state),
                "sc": message.scheduled_at,
                "dc": message.delivery_count,
                "r": message.dead_letter_reason,
                "d": message.dead_letter_description,
                "src": message.dead_letter_source,
            },
            message.payload,
        )
        self._insert(message)

    def _insert(self, message: SbMessage) -> None:
        seq = message.sequence_number
        self.messages[seq] = message
        self.next_sequence_number = max(self.next_sequence_number, seq + 1)
        if message.state is MessageState.ACTIVE:
            self._make_available(message)
        elif message.state is MessageState.SCHEDULED and message.scheduled_at is not None:
            heapq.heappush(self._scheduled, (message.scheduled_at, seq))
        if message.expires_at is not None:
            heapq.heappush(self._expiry, (message.expires_at, seq))

    def _make_available(self, message: SbMessage) -> None:
        key = message.session_id if self.requires_session else None
        heapq.heappush(self._available.setdefault(key, []), message.sequence_number)

    def notify(self) -> None:
        for listener in list(self.listeners):
            listener(self)

    # -- receiving ----------------------------------------------------------------------
    def receive(self, peek_lock: bool, session_id: str | None = None) -> SbMessage | None:
        """The next available message (of a session), locked (peek-lock) or removed."""
        now = self.clock()
        available = self._available.get(session_id, [])
        while available:
            seq = heapq.heappop(available)
            message = self.messages.get(seq)
            if message is None or message.state is not MessageState.ACTIVE or message.lock_token:
                continue
            if message.expires_at is not None and message.expires_at <= now:
                self._expire(message)
                continue
            if peek_lock:
                self._lock(message, now)
            else:
                self._remove(message)
            return message
        return None

    def accept_session(self, session_id: str | None, owner: Any) -> SessionLock:
        """Lock a session for a receiver; without an id, the first free one with messages."""
        if session_id is None:
            free = [s for s in sorted(k for k in self._available if k is not None) if self._has_available(s)]
            free = [s for s in free if self.sessions.holder(s) is None]
            if not free:
                raise SessionUnavailable(f"no session of {self.path} is available")
            session_id = free[0]
        return self.sessions.lock(session_id, owner, self.lock_duration)

    def _has_available(self, session_id: str) -> bool:
        available = self._available.get(session_id, [])
        while available:
            message = self.messages.get(available[0])
            if message is not None and message.state is MessageState.ACTIVE and not message.lock_token:
                return True
            heapq.heappop(available)  # stale entry: settled, deferred or locked since
        return False

    def _lock(self, message: SbMessage, now: float) -> None:
        token = uuid.uuid4()
        message.lock_token = token
        message.locked_until = now + self.lock_duration
        self._locks[token] = message.sequence_number
        heapq.heappush(self._lock_expiry, (message.locked_until, token))

    def locked(self, token: uuid.UUID) -> SbMessage:
        seq = self._locks.get(token)
        message = self.messages.get(seq) if seq is not None else None
        if message is None or message.lock_token != token or message.locked_until <= self.clock():
            raise LockLost(f"lock {token} is lost or expired on {self.path}")
        return message

    def _unlock(self, message: SbMessage) -> None:
        if message.lock_token is not None:
            self._locks.pop(message.lock_token, None)
            message.lock_token = None

    def _remove(self, message: SbMessage) -> None:
        self._unlock(message)
        del self.messages[message.sequence_number]
        self.journal.write({"k": "del", "e": self.path, "s": message.sequence_number})

    def _update(self, message: SbMessage) -> None:
        meta = {"k": "upd", "e": self.path, "s": message.sequence_number, "dc": message.delivery_count}
        self.journal.write({**meta, "st": int(message.state)})

    # -- settlement ---------------------------------------------------------------------
    def rewrite_locked(self, token: uuid.UUID, payload: bytes) -> None:
        """Replace a locked message's bytes (the properties a settlement modifies), durably."""
        message = self.locked(token)
        message.payload = payload
        self.journal.write({"k": "pay", "e": self.path, "s": message.sequence_number}, payload)

    def complete(self, token: uuid.UUID) -> None:
        self._remove(self.locked(token))

    def abandon(self, token: uuid.UUID) -> None:
        """Unlock for redelivery, counting the failed attempt."""
        self._return(self.locked(token), count_attempt=True)

    def release(self, token: uuid.UUID) -> None:
        """Unlock without counting an attempt (the client never looked at the message)."""
        self._return(self.locked(token), count_attempt=False)

    def _return(self, message: SbMessage, count_attempt: bool) -> None:
        self._unlock(message)
        if count_attempt:
            message.delivery_count += 1
            limit = self.max_delivery_count
            if limit is not None and message.delivery_count >= limit:
                self._dead_letter(
                    message,
                    MAX_DELIVERY_COUNT_REASON,
                    f"Message could not be consumed after {limit} delivery attempts.",
                )
                return
            self._update(message)
        if message.state is MessageState.ACTIVE:
            self._make_available(message)
            self.notify()

    def defer(self, token: uuid.UUID) -> None:
        message = self.locked(token)
        self._unlock(message)
        message.state = MessageState.DEFERRED
        self._update(message)

    def dead_letter_locked(self, token: uuid.UUID, reason: str | None, description: str | None) -> None:
        self._dead_letter(self.locked(token), reason, description)

    def _dead_letter(self, message: SbMessage, reason: str | None, description: str | None) -> None:
        self._remove(message)
        if self.dead_letter is None:
            return  # a dead-letter queue's messages are dropped, never re-dead-lettered
        target = self.dead_letter
        copy = SbMessage(
            sequence_number=target.next_sequence_number,
            payload=message.payload,
            enqueued_time=self.clock(),
            message_id=message.message_id,
            delivery_count=message.delivery_count,
            dead_letter_reason=reason,
            dead_letter_description=description,
            dead_letter_source=self.path,
        )
        target._store(copy)
        target.notify()

    def renew(self, token: uuid.UUID) -> float:
        message = self.locked(token)
        message.locked_until = self.clock() + self.lock_duration
        heapq.heappush(self._lock_expiry, (message.locked_until, token))
        return message.locked_until

    # -- management reads ---------------------------------------------------------------
    def peek(self, from_sequence_number: int, count: int) -> list[SbMessage]:
        """Messages in sequence order from ``from_sequence_number``, locked or not."""
        seqs = sorted(s for s in self.messages if s >= from_sequence_number)
        return [self.messages[s] for s in seqs[:count]]

    def receive_deferred(self, sequence_numbers: Iterable[int], peek_lock: bool) -> list[SbMessage]:
        now = self.clock()
        found: list[SbMessage] = []
        for seq in sequence_numbers:
            message = self.messages.get(seq)
            if message is None or message.state is not MessageState.DEFERRED or message.lock_token:
                continue
            if peek_lock:
                self._lock(message, now)
            else:
                self._remove(message)
            found.append(message)
        return found

    def active_sessions(self) -> set[str]:
        """Sessions with active messages (available or locked; not deferred or scheduled)."""
        return {
            m.session_id
            for m in self.messages.values()
            if m.session_id is not None and m.state is MessageState.ACTIVE
        }

    def cancel_scheduled(self, sequence_numbers: Iterable[int]) -> None:
        for seq in sequence_numbers:
            message = self.messages.get(seq)
            if message is not None and message.state is MessageState.SCHEDULED:
                self._remove(message)

    # -- time ---------------------------------------------------------------------------
    def tick(self) -> None:
        """Expire locks (redelivery), activate scheduled messages, expire TTLs."""
        now = self.clock()
        changed = False
        while self._lock_expiry and self._lock_expiry[0][0] <= now:
            _, token = heapq.heappop(self._lock_expiry)
            seq = self._locks.get(token)
            message = self.messages.get(seq) if seq is not None else None
            if message is not None and message.lock_token == token and message.locked_until <= now:
                self._return(message, count_attempt=True)
                changed = True
        while self._scheduled and self._scheduled[0][0] <= now:
            _, seq = heapq.heappop(self._scheduled)
            message = self.messages.get(seq)
            if message is not None and message.state is MessageState.SCHEDULED:
                message.state = MessageState.ACTIVE
                self._update(message)
                self._make_available(message)
                changed = True
        while self._expiry and self._expiry[0][0] <= now:
            _, seq = heapq.heappop(self._expiry)
            message = self.messages.get(seq)
            # A locked message expires when it is next fetched for delivery (see receive).
            if message is not None and message.lock_token is None:
                self._expire(message)
        if changed:
            self.notify()

    def _expire(self, message: SbMessage) -> None:
        if self.dead_letter_on_expiry:
            self._dead_letter(message, TTL_EXPIRED_REASON, "The message expired and was dead lettered.")
        else:
            self._remove(message)

    # -- durability ---------------------------------------------------------------------
    def replay(self, meta: dict[str, Any], payload: bytes) -> None:
        kind, seq = meta["k"], meta["s"]
        if kind == "enq":
            self._insert(
                SbMessage(
                    sequence_number=seq,
                    payload=payload,
                    enqueued_time=meta["t"],
                    expires_at=meta["x"],
                    message_id=meta["m"],
                    session_id=meta.get("sid"),
                    state=MessageState(meta["st"]),
                    scheduled_at=meta["sc"],
                    delivery_count=meta["dc"],
                    dead_letter_reason=meta["r"],
                    dead_letter_description=meta["d"],
                    dead_letter_source=meta["src"],
                )
            )
        elif kind == "del":
            self.messages.pop(seq, None)
        elif kind == "pay" and seq in self.messages:
            self.messages[seq].payload = payload
        elif kind == "upd" and seq in self.messages:
            message = self.messages[seq]
            message.delivery_count = meta["dc"]
            message.state = MessageState(meta["st"])
            if message.state is MessageState.ACTIVE:
                self._make_available(message)
        elif kind == "sst":
            # Records written before update times were journaled count as updated at the epoch.
            self.sessions.replay_state(meta["sid"], None if meta["none"] else payload, meta.get("t", 0.0))


class DeadLetterQueue(ReceivableEntity):
    def __init__(self, parent: ReceivableEntity) -> None:
        super().__init__(f"{parent.path}/$DeadLetterQueue", parent.journal, parent.clock, None)
        self.parent = parent

    @property
    def lock_duration(self) -> float:
        return self.parent.lock_duration

    @property
    def max_delivery_count(self) -> int | None:
        return None

    @property
    def default_ttl(self) -> float | None:
        return None

    @property
    def dead_letter_on_expiry(self) -> bool:
        return False


class ConfiguredEntity(ReceivableEntity):
    """A queue or subscription: settings come from its config model, which may be replaced."""

    dead_letter: ReceivableEntity

    config: QueueConfig | SubscriptionConfig

    def __init__(self, path: str, journal: Journal, clock: Clock) -> None:
        super().__init__(path, journal, clock, None)
        self.dead_letter = DeadLetterQueue(self)

    @property
    def lock_duration(self) -> float:
        return self.config.lock_duration_seconds

    @property
    def max_delivery_count(self) -> int | None:
        return self.config.max_delivery_count

    @property
    def default_ttl(self) -> float | None:
        return self.config.default_message_ttl_seconds

    @property
    def dead_letter_on_expiry(self) -> bool:
        return self.config.dead_lettering_on_message_expiration

    @property
    def requires_session(self) -> bool:
        return self.config.requires_session


class Queue(ConfiguredEntity):
    config: QueueConfig

    def __init__(self, config: QueueConfig, journal: Journal, clock: Clock) -> None:
        self.config = config
        super().__init__(config.name, journal, clock)
        self.duplicates = DuplicateDetector(config.duplicate_detection_window_seconds)

    def send(self, inbound: Inbound) -> SbMessage | None:
        """Enqueue, or drop a duplicate (returns None) when duplicate detection is on."""
        if self.config.requires_duplicate_detection:
            self.duplicates.window_seconds = self.config.duplicate_detection_window_seconds
            if self.duplicates.is_duplicate(inbound.message_id, self.clock()):
                return None
        return self.enqueue(inbound)

    def tick(self) -> None:
        super().tick()
        self.duplicates.purge(self.clock())
