"""Protocol dispatch for one namespace: proton events -> endpoints -> namespace state.

Connections, sessions and links are opened as the client asks; each attached link gets
an ``Endpoint`` chosen by its address. Everything runs on the reactor thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from federator_emulator import auth
from federator_emulator.amqp import eventhubs, sbmanagement, servicebus
from federator_emulator.amqp.cbs import CbsNode
from federator_emulator.amqp.endpoints import (
    INTERNAL_ERROR,
    LINK_STOLEN,
    NOT_FOUND,
    UNAUTHORIZED,
    ConnectionContext,
    Endpoint,
    Refused,
    condition,
    mirror_termini,
    refuse,
    reject,
)
from federator_emulator.amqp.sessionwait import SessionWait
from federator_emulator.identity.tenant import Tenant
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)

# Credit granted to client senders; topped up when half is used. Producers send one
# transfer at a time, so this only bounds bursts from many clients on one link.
_CREDIT = 1000


def resource_uri(address: str) -> str:
    """A link address as Azure names the resource in its errors (``sb://host/entity``)."""
    parsed = urlparse(address)
    return f"sb://{parsed.netloc}{parsed.path}" if parsed.scheme else address


def _context(obj: Any) -> ConnectionContext:
    ctx: ConnectionContext = obj.connection.fed_context
    return ctx


class Broker:
    def __init__(self, namespace: NamespaceState, tenant: Tenant) -> None:
        self.namespace = namespace
        self.tenant = tenant
        self.consumers = eventhubs.ConsumerRegistry()
        self.connections: set[Any] = set()

    # -- lifecycle -------------------------------------------------------------------------
    def on_connection_remote_open(self, event: Any) -> None:
        connection = event.connection
        connection.fed_context = ConnectionContext(self.namespace, self.tenant)
        self.connections.add(connection)
        connection.open()

    def on_connection_remote_close(self, event: Any) -> None:
        self._forget(event.connection)
        event.connection.close()

    def on_transport_closed(self, event: Any) -> None:
        if event.connection is not None:
            self._forget(event.connection)
            event.connection.free()

    def _forget(self, connection: Any) -> None:
        ctx: ConnectionContext | None = getattr(connection, "fed_context", None)
        if ctx is not None:
            for endpoint in list(ctx.endpoints):
                endpoint.on_close()
            ctx.endpoints.clear()
        self.connections.discard(connection)

    def on_session_remote_open(self, event: Any) -> None:
        event.session.open()

    def on_session_remote_close(self, event: Any) -> None:
        event.session.close()

    def on_link_remote_open(self, event: Any) -> None:
        self._attach(event.link, event.container)

    def _attach(self, link: Any, container: Any) -> None:
        """Answer a client's attach: open the link with its endpoint, make it wait, or refuse it."""
        ctx = _context(link)
        try:
            endpoint = self._endpoint(ctx, link)
        except Refused as exc:
            logger.info("refusing link to %s: %s", self._address(link), exc)
            refuse(link, exc.name, str(exc))
            return
        except servicebus.NoSessionYet as wait:
            # Answered once a session can be locked, or refused when the requested time is up.
            ctx.endpoints.add(SessionWait(ctx, link, wait, container, lambda: self._attach(link, container)))
            return
        link.fed_endpoint = endpoint
        ctx.endpoints.add(endpoint)
        mirror_termini(link)
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = link.remote_rcv_settle_mode
        link.max_message_size = ctx.namespace.config.max_message_size_bytes
        link.open()
        if link.is_receiver:
            link.flow(_CREDIT)
        refusal = endpoint.start()
        if refusal is not None:
            endpoint.detach(LINK_STOLEN, refusal)

    def on_link_remote_close(self, event: Any) -> None:
        self._close_endpoint(event.link)
        event.link.close()

    def on_link_remote_detach(self, event: Any) -> None:
        self._close_endpoint(event.link)
        event.link.detach()

    def _close_endpoint(self, link: Any) -> None:
        endpoint: Endpoint | None = getattr(link, "fed_endpoint", None)
        if endpoint is not None:
            endpoint.on_close()
            _context(link).endpoints.discard(endpoint)
            link.fed_endpoint = None

    # -- traffic ---------------------------------------------------------------------------
    def on_delivery(self, event: Any) -> None:
        delivery: Any = event.delivery
        link: Any = event.link
        endpoint: Endpoint | None = getattr(link, "fed_endpoint", None)
        if link.is_receiver:
            if delivery.partial or not delivery.readable:
                return
            payload = link.recv(delivery.pending)
            link.advance()
            if endpoint is None:
                delivery.settle()
                return
            limit = link.max_message_size
            if len(payload) > limit:  # a client that ignored the announced limit, refused as Azure does
                reject(
                    delivery,
                    "amqp:link:message-size-exceeded",
                    f"The received message (size: {len(payload)} bytes) exceeds the limit ({limit} bytes) "
                    "currently allowed on the link.",
                )
            else:
                endpoint.on_message(delivery, bytes(payload))
            if link.credit < _CREDIT // 2:
                link.flow(_CREDIT - link.credit)
        elif delivery.updated and endpoint is not None:
            endpoint.on_update(delivery)

    def on_link_flow(self, event: Any) -> None:
        endpoint: Endpoint | None = getattr(event.link, "fed_endpoint", None)
        if endpoint is not None and event.link.is_sender:
            endpoint.on_flow()

    # -- routing ---------------------------------------------------------------------------
    @staticmethod
    def _address(link: Any) -> str:
        terminus = link.remote_source if link.is_sender else link.remote_target
        return str(terminus.address or "")

    def _endpoint(self, ctx: ConnectionContext, link: Any) -> Endpoint:
        address = self._address(link)
        path = auth.entity_path(address)
        if path == "$cbs":
            return self._reply_or(ctx, link, lambda: CbsNode(ctx, link))
        if path == "$management" or path.endswith("/$management"):
            entity = path[: -len("$management")].rstrip("/")
            # The entity's token or one for its `<entity>/$management` node, which the SDKs ask for.
            if not (ctx.grants.allows(path) if entity else ctx.grants.any_valid()):
                raise Refused(UNAUTHORIZED, f"no valid CBS token for {address!r}")
            # Each operation checks its own claim (sbmanagement); Event Hubs' READ takes any.
            if entity:
                parts = entity.split("/")
                return self._reply_or(ctx, link, lambda: sbmanagement.Management(ctx, link, parts))
            return self._reply_or(ctx, link, lambda: eventhubs.Management(ctx, link))
        right = "Send" if link.is_receiver else "Listen"  # the client sends on a link we receive on
        if not ctx.grants.allows(path, right):
            raise Refused(UNAUTHORIZED, auth.missing_claim(right, resource_uri(address)))
        try:
            endpoint = self._entity_endpoint(ctx, link, path.split("/"), address)
        except UnknownEntity as exc:
            raise Refused(NOT_FOUND, str(exc)) from None
        endpoint.authorized_by = (path, right)
        return endpoint

    # -- token expiry ----------------------------------------------------------------------
    def detach_expired(self, now: float) -> None:
        """Detach every entity link whose connection no longer holds a valid token for it, as Azure
        drops a connection's links to an entity when its token expires (a client renews it before)."""
        for connection in list(self.connections):
            ctx: ConnectionContext | None = getattr(connection, "fed_context", None)
            if ctx is None:
                continue
            for endpoint in list(ctx.endpoints):
                if endpoint.authorized_by is None:
                    continue
                path, right = endpoint.authorized_by
                if not ctx.grants.allows(path, right, now):
                    resource = resource_uri(self._address(endpoint.link))
                    endpoint.detach(UNAUTHORIZED, auth.expired_token(resource))

    def _reply_or(self, ctx: ConnectionContext, link: Any, make: Callable[[], Endpoint]) -> Endpoint:
        """Request nodes: the client's receiver is our reply link, its sender carries requests."""
        if link.is_sender:
            # A request's reply-to names the client's receiver by its target address (the Python SDKs)
            # or by the link's name (the JS SDKs' $cbs link has no target): Azure answers both.
            names = {link.name, link.remote_source.address, link.remote_target.address} - {None}
            for address in names:
                ctx.reply_links[(link.session, address)] = link
            return Endpoint(ctx, link)
        return make()

    def _entity_endpoint(self, ctx: ConnectionContext, link: Any, parts: list[str], address: str) -> Endpoint:
        ns = self.namespace
        name = parts[0]
        if name in ns.event_hubs:
            hub = ns.event_hub(name)
            if link.is_receiver:
                if len(parts) == 1:
                    return eventhubs.Producer(ctx, link, hub, None)
                if len(parts) == 3 and parts[1] == "partitions":
                    return eventhubs.Producer(ctx, link, hub, hub.partition(parts[2]))
            elif len(parts) == 5 and parts[1] == "consumergroups" and parts[3] == "partitions":
                if not hub.has_consumer_group(parts[2]):
                    raise UnknownEntity(f"consumer group {parts[2]!r} not found on event hub {hub.name!r}")
                key = (hub.name.lower(), parts[2], parts[4])
                return eventhubs.Consumer(ctx, link, hub.partition(parts[4]), self.consumers, key)
            raise UnknownEntity(f"unsupported event hub address {address!r}")
        return servicebus.entity_endpoint(ctx, link, parts)


class Guard:
    """Proton handler that forwards every event to the broker and contains its failures.

    An exception escaping a proton handler stops the whole container; here it closes only
    the connection that caused it.
    """

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def on_unhandled(self, method: str, event: Any) -> None:
        handler = getattr(self.broker, method, None)
        if handler is None:
            return
        try:
            handler(event)
        except Exception:
            logger.exception("error handling %s; closing the connection", method)
            connection = event.connection
            if connection is not None:
                connection.condition = condition(INTERNAL_ERROR, "emulator internal error")
                connection.close()
