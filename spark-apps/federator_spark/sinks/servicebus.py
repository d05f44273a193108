"""Publishing to a Service Bus queue or topic in size-bounded batches, in arrival order; a message
over the entity's size limit, or with a SessionId over Service Bus's 128 characters, is refused
(:class:`~federator_spark.sinks.undeliverable.Undeliverable`).

Each message's MessageId is stable across replays (:attr:`Event.message_id`: a Service Bus source's own
MessageId, else the source identity ``<host>/<entity>/<partition>/<sequence>``), so a target with
duplicate detection drops what a replayed batch sends again. TimeToLive, To, ReplyTo, Subject,
CorrelationId and ContentType of a Service Bus source travel with the message. SessionId comes from the
partition key (the source partition id for keyless events), so session-enabled queues accept every
message and a session receiver sees each stream in order; the same key is kept as PartitionKey.

Messages are encoded once, by ``sinks/amqp_encoding.py``, to the bytes ``ServiceBusMessage`` and
``ServiceBusMessageBatch.add_message`` would have produced (which encoded each message twice), and
appended to the SDK's batch; its envelope carries the first message's MessageId, SessionId and
PartitionKey, as ``add_message`` sets it. The SDK sends the batch, with its retries.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from federator_spark.eventhubs_management import close_transport, handler_connection
from federator_spark.events import Event
from federator_spark.outages import Endpoint, retrying
from federator_spark.plan import TargetPlan
from federator_spark.property_types import PropertyValue
from federator_spark.sinks.amqp_encoding import append, encode_message, header_ttl
from federator_spark.sinks.kept_clients import KeptClients
from federator_spark.sinks.undeliverable import Undeliverable

logger = logging.getLogger(__name__)

_FLUSH_MESSAGES = 500
# The system properties of a source that travel with a message (MessageId and SessionId are the sink's).
_SYSTEM_PROPERTIES = ("content_type", "correlation_id", "subject", "to", "reply_to")
_MAX_SESSION_ID = 128  # Service Bus's limit, which the SDK checks

# Senders a Python worker keeps, one per target entity: opening one (connection, CBS, link, each polled
# every 50 ms) took 0.47 s and closing it 0.7 s (the client joins its keep-alive thread) on the emulator,
# per task, more than sending a batch of 500 messages. One no task used for a while is closed
# (``kept_clients``).
SenderKey = tuple[str, str, bool]


def _close_sender(kept: tuple[Any, Any]) -> None:
    """Close the sender, its client and its connection's socket: once a read or write on a connection has
    failed, the SDK ends it without closing its socket."""
    client, sender = kept
    connection = handler_connection(sender)
    try:
        with contextlib.suppress(Exception):
            sender.close()
        client.close()
    finally:
        close_transport(connection)


_senders: KeptClients[SenderKey, tuple[Any, Any]] = KeptClients("Service Bus senders", _close_sender)


def _sender_key(target: TargetPlan) -> SenderKey:
    return target.connection.to_option(), target.entity, target.is_topic


def kept_sender(target: TargetPlan) -> Any:
    """This worker's sender to ``target``'s entity, opened on first use."""
    return _senders.get(_sender_key(target), lambda: _open_sender(target))[1]


def _open_sender(target: TargetPlan) -> tuple[Any, Any]:
    from federator_spark.connections import servicebus_client

    client = servicebus_client(target.connection)
    if target.is_topic:
        return client, client.get_topic_sender(topic_name=target.entity)
    return client, client.get_queue_sender(queue_name=target.entity)


def forget_sender(target: TargetPlan) -> None:
    """Close and drop ``target``'s kept sender (after a failure): the next task opens a new one."""
    _senders.forget(_sender_key(target))


def append_message(batch: Any, encoded: bytes, message_id: str, session: str) -> bool:
    """:func:`append` to a ``ServiceBusMessageBatch``; as ``add_message`` does, the first message gives
    the batch envelope its MessageId, SessionId and partition key."""
    if not append(batch, encoded):
        return False
    if len(batch) == 1:
        batch._amqp_transport.set_batch_envelope_properties(batch._message, message_id, session, session)
    return True


def _encoded(event: Event, properties: Mapping[str, PropertyValue], session: str) -> bytes:
    """``event`` as its message, in the session (and with the partition key) ``session``."""
    if len(session) > _MAX_SESSION_ID:
        raise Undeliverable(
            f"a SessionId of {len(session)} characters exceeds the limit of Service Bus "
            f"({_MAX_SESSION_ID} characters)"
        )
    system = event.system_properties
    fields = {name: system[name] for name in _SYSTEM_PROPERTIES if name in system}
    fields["message_id"], fields["group_id"] = event.message_id, session
    ttl = system.get("time_to_live")  # from a Service Bus source: e.g. set by an activePassive rule
    return encode_message(event.body, properties, fields, session, header_ttl(float(ttl)) if ttl else None)


class ServiceBusPublisher:
    def __init__(self, target: TargetPlan, status_file: str | None = None) -> None:
        self.target = target
        self._endpoint = Endpoint("target", target.name, status_file)
        self._sender = kept_sender(target)
        self._batch: Any = None  # the batch being filled

    def add(self, event: Event, properties: Mapping[str, PropertyValue]) -> None:
        """Add ``event`` to the batch being filled, sending it first when full; raises
        :class:`Undeliverable` for a message over the entity's message size limit, or with a SessionId
        longer than Service Bus allows."""
        session = event.partition_key if event.partition_key is not None else event.partition
        encoded = _encoded(event, properties, session)
        if not self._append(encoded, event.message_id, session):
            self.flush()
            if not self._append(encoded, event.message_id, session):  # not even alone
                raise Undeliverable(
                    f"a message with a body of {len(event.body)} bytes exceeds the message size limit "
                    f"of {self.target.entity} ({self._batch.max_size_in_bytes} bytes)"
                )
        if len(self._batch) >= _FLUSH_MESSAGES:
            self.flush()

    def _append(self, encoded: bytes, message_id: str, session: str) -> bool:
        if self._batch is None:  # the SDK asks the broker for the size limit once, opening a link
            self._batch = self._retrying(self._sender.create_message_batch, f"opening {self.target.entity}")
        return append_message(self._batch, encoded, message_id, session)

    def flush(self) -> None:
        batch, self._batch = self._batch, None
        if batch is not None and len(batch):
            self._send(batch)

    def _send(self, batch: Any) -> None:
        self._retrying(lambda: self._sender.send_messages(batch), f"sending to {self.target.entity}")

    def _retrying(self, action: Any, what: str) -> Any:
        """``action()``, retried through outages (``outages.retrying``); a sender it fails on for good is
        not kept for the next task."""
        try:
            return retrying(action, self._endpoint, what)
        except BaseException:
            forget_sender(self.target)
            raise

    def close(self) -> None:
        """Nothing to close: the sender stays open for this worker's next task."""
