"""Publishing to a Service Bus queue or topic in size-bounded batches, in arrival order; a message
over the entity's size limit is refused (:class:`~federator_spark.sinks.undeliverable.Undeliverable`).

Each message's MessageId is stable across replays (:attr:`Event.message_id`: a Service Bus source's own
MessageId, else the source identity ``<host>/<entity>/<partition>/<sequence>``), so a target with
duplicate detection drops what a replayed batch sends again. TimeToLive, To and ReplyTo of a Service Bus
source travel with the message. SessionId comes from the
partition key (the source partition id for keyless events), so session-enabled queues accept every
message and a session receiver sees each stream in order; the same key is kept as PartitionKey.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from federator_spark.events import Event
from federator_spark.outages import Endpoint, retrying
from federator_spark.plan import TargetPlan
from federator_spark.property_types import PropertyValue, for_amqp
from federator_spark.sinks.undeliverable import Undeliverable

logger = logging.getLogger(__name__)

_FLUSH_MESSAGES = 500

# Senders a Python worker keeps, one per target entity: opening one (connection, CBS, link, each polled
# every 50 ms) took 0.47 s and closing it 0.7 s (the client joins its keep-alive thread) on the emulator,
# per task, more than sending a batch of 500 messages.
_senders: dict[tuple[str, str, bool], tuple[Any, Any]] = {}
_senders_lock = threading.Lock()


def _sender_key(target: TargetPlan) -> tuple[str, str, bool]:
    return target.connection.to_option(), target.entity, target.is_topic


def kept_sender(target: TargetPlan) -> Any:
    """This worker's sender to ``target``'s entity, opened on first use."""
    from federator_spark.connections import servicebus_client

    key = _sender_key(target)
    with _senders_lock:
        if key not in _senders:
            client = servicebus_client(target.connection)
            if target.is_topic:
                sender = client.get_topic_sender(topic_name=target.entity)
            else:
                sender = client.get_queue_sender(queue_name=target.entity)
            _senders[key] = (client, sender)
        return _senders[key][1]


def forget_sender(target: TargetPlan) -> None:
    """Close and drop ``target``'s kept sender (after a failure): the next task opens a new one."""
    with _senders_lock:
        kept = _senders.pop(_sender_key(target), None)
    for closing in reversed(kept or ()):
        with contextlib.suppress(Exception):
            closing.close()


class ServiceBusPublisher:
    def __init__(self, target: TargetPlan, status_file: str | None = None) -> None:
        self.target = target
        self._endpoint = Endpoint("target", target.name, status_file)
        self._sender = kept_sender(target)
        self._batch: Any = None  # the batch being filled

    def add(self, event: Event, properties: Mapping[str, PropertyValue]) -> None:
        """Add ``event`` to the batch being filled, sending it first when full; raises
        :class:`Undeliverable` for a message over the entity's message size limit."""
        from azure.servicebus import ServiceBusMessage

        system = event.system_properties
        session = event.partition_key if event.partition_key is not None else event.partition
        ttl = system.get("time_to_live")  # from a Service Bus source: e.g. set by an activePassive rule
        message = ServiceBusMessage(
            event.body,
            application_properties=for_amqp(properties),
            message_id=event.message_id,
            session_id=session,
            partition_key=session,
            content_type=system.get("content_type"),
            correlation_id=system.get("correlation_id"),
            subject=system.get("subject"),
            to=system.get("to"),
            reply_to=system.get("reply_to"),
            time_to_live=timedelta(seconds=float(ttl)) if ttl else None,
        )
        if not self._append(message):
            self.flush()
            if not self._append(message):  # not even alone
                raise Undeliverable(
                    f"a message with a body of {len(event.body)} bytes exceeds the message size limit "
                    f"of {self.target.entity} ({self._batch.max_size_in_bytes} bytes)"
                )
        if len(self._batch) >= _FLUSH_MESSAGES:
            self.flush()

    def _append(self, message: Any) -> bool:
        from azure.servicebus.exceptions import MessageSizeExceededError

        if self._batch is None:  # the SDK asks the broker for the size limit once, opening a link
            self._batch = self._retrying(self._sender.create_message_batch, f"opening {self.target.entity}")
        try:
            self._batch.add_message(message)
        except MessageSizeExceededError:
            return False
        return True

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
