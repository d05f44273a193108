"""Service Bus links: senders to queues/topics and receivers from queues, subscriptions and DLQs."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from proton import Delivery, Link, symbol, ulong

from federator_emulator.amqp import codec
from federator_emulator.amqp.endpoints import (
    LOCK_LOST,
    NOT_ALLOWED,
    ConnectionContext,
    Endpoint,
    Refused,
    accept,
    condition,
    reject,
    source_filters,
)
from federator_emulator.amqp.messages import AmqpInbound, delivery_payload, with_application_properties
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.servicebus import LockLost, Queue, ReceivableEntity
from federator_emulator.state.sessions import SessionLock, SessionUnavailable
from federator_emulator.state.topics import Topic

logger = logging.getLogger(__name__)

MAX_BATCH_SIZE = symbol("com.microsoft:max-message-batch-size")
SESSION_FILTER = symbol("com.microsoft:session-filter")
LOCKED_UNTIL_UTC = symbol("com.microsoft:locked-until-utc")
SESSION_CANNOT_BE_LOCKED = "com.microsoft:session-cannot-be-locked"
TIMEOUT = "com.microsoft:timeout"
_DOTNET_EPOCH_TICKS = 621355968000000000
_BATCH_SIZE = 1024 * 1024  # Azure's batch limit; a namespace with a smaller message size limit announces that
DEAD_LETTER_QUEUE = "$deadletterqueue"
DEFAULT_SESSION_WAIT_SECONDS = 60.0


def resolve_receivable(ctx: ConnectionContext, parts: list[str]) -> ReceivableEntity:
    """``q``, ``q/$DeadLetterQueue``, ``t/Subscriptions/s`` or ``t/Subscriptions/s/$DeadLetterQueue``."""
    ns = ctx.namespace
    dead_letter = parts[-1] == DEAD_LETTER_QUEUE
    if dead_letter:
        parts = parts[:-1]
    entity: ReceivableEntity
    if len(parts) == 1:
        entity = ns.queue(parts[0])
    elif len(parts) == 3 and parts[1] == "subscriptions":
        entity = ns.topic(parts[0]).subscription(parts[2])
    else:
        raise UnknownEntity(f"unsupported Service Bus path {'/'.join(parts)!r}")
    if dead_letter:
        assert entity.dead_letter is not None  # queues and subscriptions always have one
        return entity.dead_letter
    return entity


def resolve_sendable(ctx: ConnectionContext, parts: list[str]) -> Queue | Topic:
    if len(parts) != 1:
        raise UnknownEntity(f"cannot send to {'/'.join(parts)!r}")
    ns = ctx.namespace
    if parts[0] in ns.queues:
        return ns.queue(parts[0])
    return ns.topic(parts[0])


def entity_endpoint(ctx: ConnectionContext, link: Link, parts: list[str]) -> Endpoint:
    """The endpoint for a link to a queue, topic, subscription or dead-letter queue."""
    if link.is_receiver:
        batch_size = min(_BATCH_SIZE, ctx.namespace.config.max_message_size_bytes)
        link.properties = {MAX_BATCH_SIZE: ulong(batch_size)}
        return Sender(ctx, link, resolve_sendable(ctx, parts))
    peek_lock = link.remote_snd_settle_mode != Link.SND_SETTLED
    entity = resolve_receivable(ctx, parts)
    filters = source_filters(link)
    if not entity.requires_session:
        return Receiver(ctx, link, entity, peek_lock, session=None)
    if SESSION_FILTER not in filters:
        raise Refused(NOT_ALLOWED, f"{entity.path} requires sessions: use a session receiver")
    receiver = Receiver(ctx, link, entity, peek_lock, session=None)
    requested = filters[SESSION_FILTER]
    try:
        receiver.session = entity.accept_session(None if requested is None else str(requested), receiver)
    except SessionUnavailable as exc:
        if requested is not None:
            raise Refused(SESSION_CANNOT_BE_LOCKED, str(exc)) from None
        raise NoSessionYet(entity, session_wait_seconds(link)) from None
    # The SDK learns the session id and its lock expiry from our attach.
    link.source.filter.put_dict({SESSION_FILTER: receiver.session.session_id})
    link.properties = {LOCKED_UNTIL_UTC: dotnet_ticks(receiver.session.locked_until)}
    return receiver


class NoSessionYet(Exception):
    """A next-available-session receiver found no session to lock: it waits (``amqp.sessionwait``)."""

    def __init__(self, entity: ReceivableEntity, wait_seconds: float) -> None:
        super().__init__(f"no session of {entity.path} is available")
        self.entity = entity
        self.wait_seconds = wait_seconds


def session_wait_seconds(link: Link) -> float:
    """How long a next-available-session attach may wait: the client's ``com.microsoft:timeout``
    link property (milliseconds), else Service Bus's default operation timeout."""
    timeout = (link.remote_properties or {}).get(symbol(TIMEOUT))
    return DEFAULT_SESSION_WAIT_SECONDS if timeout is None else int(timeout) / 1000


def dotnet_ticks(epoch_seconds: float) -> int:
    """A time as .NET ticks (100 ns since 0001-01-01), as Service Bus sends lock expiries."""
    return _DOTNET_EPOCH_TICKS + int(epoch_seconds * 10_000_000)


def send_inbound(target: Queue | Topic, payload: bytes) -> None:
    """Store one client message, or every message of a batch envelope."""
    batch = codec.split_batch(payload)
    for inner in batch[1] if batch is not None else [payload]:
        target.send(AmqpInbound(inner))


class Sender(Endpoint):
    """Client sender to a queue or topic."""

    def __init__(self, ctx: ConnectionContext, link: Link, target: Queue | Topic) -> None:
        super().__init__(ctx, link)
        self.target = target

    def on_message(self, delivery: Delivery, payload: bytes) -> None:
        try:
            send_inbound(self.target, payload)
        except codec.CodecError as exc:
            reject(delivery, "amqp:decode-error", str(exc))
            return
        self.namespace.journal.commit()
        accept(delivery)


class Receiver(Endpoint):
    """Client receiver; peek-lock deliveries are tagged with the 16-byte lock token."""

    def __init__(
        self,
        ctx: ConnectionContext,
        link: Link,
        entity: ReceivableEntity,
        peek_lock: bool,
        session: SessionLock | None,
    ) -> None:
        super().__init__(ctx, link)
        self.entity = entity
        self.peek_lock = peek_lock
        self.session = session

    def start(self) -> str | None:
        self.entity.listeners.append(self._on_entity)
        return None

    def _on_entity(self, _entity: ReceivableEntity) -> None:
        self.on_flow()

    def on_flow(self) -> None:
        link = self.link
        session_id = None
        if self.session is not None:
            session_id = self.session.session_id
            if self.entity.sessions.holder(session_id) is not self:
                return  # the session lock expired: deliver nothing more on this link
        while link.credit > 0:
            message = self.entity.receive(self.peek_lock, session_id)
            if message is None:
                break
            payload = delivery_payload(message)
            if self.peek_lock:
                assert message.lock_token is not None
                delivery = link.delivery(message.lock_token.bytes_le)  # type: ignore[arg-type]
                delivery.fed_token = message.lock_token
                link.send(payload)
                link.advance()
            else:
                self.send_settled(payload)
        if not self.peek_lock:
            self.namespace.journal.commit()
        if link.drain_mode:
            link.drained()

    def on_update(self, delivery: Delivery) -> None:
        token: uuid.UUID | None = getattr(delivery, "fed_token", None)
        state = delivery.remote_state
        if token is None or state is None:
            delivery.settle()
            return
        try:
            settle(self.entity, token, state, delivery.remote)
        except LockLost as exc:
            delivery.local.condition = condition(LOCK_LOST, str(exc))
            delivery.update(Delivery.REJECTED)
            delivery.settle()
            return
        self.namespace.journal.commit()
        # The SDK waits for the same outcome echoed back in a settled disposition.
        if state == Delivery.MODIFIED:
            delivery.local.failed = delivery.remote.failed
            delivery.local.undeliverable = delivery.remote.undeliverable
        delivery.update(state)
        delivery.settle()

    def on_close(self) -> None:
        if self._on_entity in self.entity.listeners:
            self.entity.listeners.remove(self._on_entity)
        if self.session is not None:
            self.entity.sessions.release(self.session.session_id, self)


def settle(entity: ReceivableEntity, token: uuid.UUID, state: int, remote: Any) -> None:
    """Apply a client outcome to a locked message (raises ``LockLost``)."""
    changes = properties_to_modify(state, remote)
    if changes:
        entity.rewrite_locked(token, with_application_properties(entity.locked(token).payload, changes))
    if state == Delivery.ACCEPTED:
        entity.complete(token)
    elif state == Delivery.RELEASED:
        entity.release(token)
    elif state == Delivery.MODIFIED:
        # Service Bus reads modified by undeliverable-here alone: set, it defers; unset, it abandons and
        # counts the attempt whatever delivery-failed says (the JS SDK leaves delivery-failed unset).
        if remote.undeliverable:
            entity.defer(token)
        else:
            entity.abandon(token)
    elif state == Delivery.REJECTED:
        reason, description = dead_letter_details(remote.condition)
        entity.dead_letter_locked(token, reason, description)


_DEAD_LETTER_KEYS = frozenset({"DeadLetterReason", "DeadLetterErrorDescription"})


def properties_to_modify(state: int, remote: Any) -> dict[str, Any]:
    """The application properties an abandon, defer or dead-letter asks to set: a modified outcome's
    message-annotations, or a rejection's error info beside the dead-letter reason and description."""
    if state == Delivery.MODIFIED:
        given = codec.own(remote.annotations or {})
    elif state == Delivery.REJECTED and remote.condition is not None:
        given = codec.own(remote.condition.info or {})
    else:
        return {}
    return {str(k): v for k, v in given.items() if str(k) not in _DEAD_LETTER_KEYS}


def dead_letter_details(rejection: Any) -> tuple[str | None, str | None]:
    if rejection is None:
        return None, None
    info = codec.own(rejection.info or {})
    reason = info.get(symbol("DeadLetterReason"), info.get("DeadLetterReason"))
    description = info.get(symbol("DeadLetterErrorDescription"), info.get("DeadLetterErrorDescription"))
    return reason, description if description is not None else rejection.description
