"""Health probes and drain checks over AMQP with the real SDKs: connect, then one management request —
Event Hubs: read the event hub's properties; Service Bus: peek one message of a queue or subscription
(nothing is received or locked)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import certifi
from azure.core.credentials_async import AsyncTokenCredential
from azure.eventhub.aio import EventHubConsumerClient
from azure.identity.aio import DefaultAzureCredential
from azure.servicebus.aio import ServiceBusClient, ServiceBusReceiver

from federator.failover.connections import MemberConnection
from federator.failover.state import ProbeOutcome
from federator.validation.secrets import secret_shape
from federator_contract.api.base import QueueOrSubscription
from federator_contract.api.failovergroup import ProbeEntity

# A probe is one attempt: the SDKs' own retries would stretch a failure beyond the probe's timeout. Without
# a backoff factor of 0 they still sleep 0.8 s after the one attempt fails, before reporting it.
_NO_RETRY: dict[str, Any] = {"retry_total": 0, "retry_backoff_factor": 0}
_CLOSE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class EntityRef:
    """What a probe reads: an event hub, a queue, or a topic subscription."""

    kind: Literal["eventHub", "queue", "subscription"]
    name: str
    subscription: str | None = None
    consumer_group: str = "$Default"

    def __str__(self) -> str:
        return f"{self.name}/subscriptions/{self.subscription}" if self.subscription else self.name

    @classmethod
    def of(cls, entity: ProbeEntity | QueueOrSubscription) -> EntityRef:
        if isinstance(entity, ProbeEntity) and entity.event_hub_name is not None:
            return cls("eventHub", entity.event_hub_name)
        if entity.queue_name is not None:
            return cls("queue", entity.queue_name)
        assert entity.topic_name is not None and entity.subscription_name is not None
        return cls("subscription", entity.topic_name, entity.subscription_name)


class Prober:
    """Runs probes and drain checks. Each opens its own AMQP connection and closes it when done: the SDKs
    (azure-servicebus 7.15, azure-eventhub 5.15) leave the socket of a kept connection open when the peer
    breaks it, which a probe of a failing member would do every round; and an Event Hubs management read
    opens a connection of its own anyway. Only token credentials are kept (they cache tokens), and one TLS
    context: the SDKs otherwise build one per connection, loading every CA certificate each time (about
    40 ms of CPU, which made probes most of a busy operator's work). One per operator."""

    def __init__(self) -> None:
        self._credentials: dict[str | None, AsyncTokenCredential] = {}
        self._tls: ssl.SSLContext | None = None

    @property
    def tls(self) -> ssl.SSLContext:
        """What the SDKs would build for each connection (their default trust: certifi's CAs), built once."""
        if self._tls is None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            self._tls.load_verify_locations(certifi.where())
        return self._tls

    async def probe(self, connection: MemberConnection, entity: EntityRef, timeout: float) -> ProbeOutcome:
        """Healthy when the connection opens and the management read answers within `timeout` seconds."""
        try:
            await asyncio.wait_for(self._read(connection, [entity]), timeout)
        except Exception as err:  # every failure is a failed probe; its text is the probe's message
            return ProbeOutcome(False, describe(err))
        return ProbeOutcome(True)

    async def holding(
        self, connection: MemberConnection, entities: list[EntityRef], timeout: float
    ) -> list[str]:
        """The Service Bus entities that still hold a message (active, locked, deferred or scheduled).
        Raises when the check fails: "drained" must never be a guess."""
        counts = await asyncio.wait_for(self._read(connection, entities), timeout)
        return [str(entity) for entity, count in zip(entities, counts, strict=True) if count]

    async def _read(self, connection: MemberConnection, entities: list[EntityRef]) -> list[int]:
        return list(await asyncio.gather(*(self._read_one(connection, e) for e in entities)))

    async def _read_one(self, connection: MemberConnection, entity: EntityRef) -> int:
        """Event Hubs: 0 once the properties are read; Service Bus: the messages peeked (0 or 1)."""
        if entity.kind == "eventHub":
            async with self._event_hub_client(connection, entity) as hub:
                await hub.get_eventhub_properties()
            return 0
        async with self._bus_client(connection) as bus, _receiver(bus, entity) as receiver:
            # From the first sequence number every time: the SDK otherwise browses on from the last message
            # it peeked, and a message peeked once would look gone.
            return len(await receiver.peek_messages(max_message_count=1, sequence_number=1))

    def _event_hub_client(self, connection: MemberConnection, entity: EntityRef) -> EventHubConsumerClient:
        if connection.connection_string is not None:
            return EventHubConsumerClient.from_connection_string(
                connection.connection_string,
                consumer_group=entity.consumer_group,
                eventhub_name=entity.name,
                ssl_context=self.tls,
                **_NO_RETRY,
            )
        assert connection.fully_qualified_namespace is not None
        return EventHubConsumerClient(
            connection.fully_qualified_namespace,
            entity.name,
            entity.consumer_group,
            self._credential(connection.client_id),
            ssl_context=self.tls,
            **_NO_RETRY,
        )

    def _bus_client(self, connection: MemberConnection) -> ServiceBusClient:
        if connection.connection_string is not None:
            return ServiceBusClient.from_connection_string(
                connection.connection_string, ssl_context=self.tls, **_NO_RETRY
            )
        assert connection.fully_qualified_namespace is not None
        return ServiceBusClient(
            connection.fully_qualified_namespace,
            self._credential(connection.client_id),
            ssl_context=self.tls,
            **_NO_RETRY,
        )

    def _credential(self, client_id: str | None) -> AsyncTokenCredential:
        found = self._credentials.get(client_id)
        if found is None:
            found = self._credentials[client_id] = (
                DefaultAzureCredential(
                    workload_identity_client_id=client_id, managed_identity_client_id=client_id
                )
                if client_id
                else DefaultAzureCredential()
            )
        return found

    async def close(self) -> None:
        credentials = list(self._credentials.values())
        self._credentials.clear()
        await asyncio.gather(*(_close(c.close) for c in credentials))


def _receiver(bus: ServiceBusClient, entity: EntityRef) -> ServiceBusReceiver:
    if entity.kind == "queue":
        receiver = bus.get_queue_receiver(entity.name)
    else:
        receiver = bus.get_subscription_receiver(entity.name, entity.subscription or "")
    _closing_its_socket(receiver)
    return receiver


def _closing_its_socket(receiver: ServiceBusReceiver) -> None:
    """Make ``receiver`` close its connection's socket when it drops its AMQP handler. azure-servicebus 7.15
    leaves it open when the connection's opening failed or was cancelled (a probe's timeout; the handler's
    close returns before any session exists) and when the connection failed while closing (marked ended
    first, so its transport is skipped): a probe of a silent or stopped member left one every round, to a
    garbage collection."""
    close_handler: Callable[[], Awaitable[None]] = receiver._close_handler  # the SDK's, not an API

    async def close_handler_and_socket() -> None:
        handler = receiver._handler
        connection = None if getattr(handler, "_external_connection", True) else handler._connection
        try:
            await close_handler()
        finally:
            transport = getattr(connection, "_transport", None)
            if transport is not None:
                await transport.close()  # does nothing on a closed one

    receiver._close_handler = close_handler_and_socket  # type: ignore[method-assign]


async def _close(close: Callable[[], Awaitable[None]]) -> None:
    # A client whose connection broke may fail or hang while closing: neither must stop the next probe.
    with contextlib.suppress(Exception):
        await asyncio.wait_for(close(), _CLOSE_TIMEOUT_SECONDS)


def describe(err: BaseException) -> str:
    """A probe failure in one line (SDK messages span several), bounded for status and Events."""
    if isinstance(err, TimeoutError):
        return "no answer within the probe timeout"
    text = " ".join(str(err).split()) or type(err).__name__
    # The Service Bus SDK's errors say only "Error condition: ..."; the broker's words (e.g. "The
    # messaging entity ... could not be found") are on the AMQP error inside.
    inner = getattr(err, "inner_exception", None)
    if inner is not None and (detail := " ".join(str(inner).split())) and detail not in text:
        text = f"{text} {detail}"
    if (shape := secret_shape(text)) is not None:
        return f"{type(err).__name__} (its message contained {shape} and is not shown)"
    return text if len(text) <= 300 else text[:297] + "..."
