"""Shared pieces of the link endpoints: the per-connection context and reply helpers."""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

import cproton
from proton import Condition, Delivery, Link, LinkException, Message, Terminus, symbol

from federator_emulator.amqp import codec
from federator_emulator.auth import ConnectionGrants
from federator_emulator.identity.tenant import Tenant
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)

# Conditions (AMQP 1.0 §2.8.15 and the Azure vendor ones the SDKs map to exceptions).
NOT_FOUND = "amqp:not-found"
UNAUTHORIZED = "amqp:unauthorized-access"
LINK_STOLEN = "amqp:link:stolen"
INTERNAL_ERROR = "amqp:internal-error"
NOT_ALLOWED = "amqp:not-allowed"
LOCK_LOST = "com.microsoft:message-lock-lost"

# Nested error lists are read by position too, and the padding shim only pads
# performatives, so every condition carries a non-empty info map.
_INFO: dict[Any, Any] = {symbol("com.microsoft:tracking-id"): "federator-emulator"}


class OperationError(Exception):
    """A management operation's answer that is not a success: its status and error condition."""

    def __init__(self, status: int, condition: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.condition = condition


class Refused(Exception):
    """An attach is refused with this AMQP condition."""

    def __init__(self, name: str, description: str) -> None:
        super().__init__(description)
        self.name = name


def source_filters(link: Link) -> dict[Any, Any]:
    """The filter set the client put on the link's source (empty when none)."""
    data = link.remote_source.filter
    data.rewind()
    filters = codec.own(data.get_object()) if data.next() else None
    return filters if isinstance(filters, dict) else {}


def condition(name: str, description: str) -> Condition:
    return Condition(name, description, dict(_INFO))


@dataclass(eq=False)
class ConnectionContext:
    namespace: NamespaceState
    tenant: Tenant  # verifies Microsoft Entra tokens put over CBS
    grants: ConnectionGrants = field(default_factory=ConnectionGrants)
    # Server->client links by (session, address or link name) for CBS / management replies.
    reply_links: dict[tuple[Any, str], Link] = field(default_factory=dict)
    endpoints: set[Endpoint] = field(default_factory=set)

    def reply_link(self, session: Any, address: str) -> Link | None:
        return self.reply_links.get((session, address))


class Endpoint:
    """Behaviour behind one attached link; subclasses handle one kind of node."""

    def __init__(self, ctx: ConnectionContext, link: Link) -> None:
        self.ctx = ctx
        self.link = link
        self._tags = itertools.count()
        # An entity link's path and the claim it was attached with: it is detached when the
        # connection's token for it expires (None: request nodes, whose operations check their own).
        self.authorized_by: tuple[str, str] | None = None

    @property
    def namespace(self) -> NamespaceState:
        return self.ctx.namespace

    def on_message(self, delivery: Delivery, payload: bytes) -> None:
        """A complete message arrived on a client->server link."""
        accept(delivery)

    def on_update(self, delivery: Delivery) -> None:
        """The client settled or changed the state of a delivery we sent."""
        delivery.settle()

    def on_flow(self) -> None:
        """The client granted credit (or asked to drain) on a server->client link."""

    def start(self) -> str | None:
        """Called once the link is open; a returned reason detaches it with ``amqp:link:stolen``."""
        return None

    def on_close(self) -> None:
        """The link went away (either side ended it): drop registrations. Idempotent."""

    def next_tag(self) -> bytes:
        return str(next(self._tags)).encode()

    def send_settled(self, payload: bytes, tag: bytes | None = None) -> None:
        # Straight through proton's C API: the Python Delivery wrapper (its attachment records) cost
        # more than the send itself, and a settled delivery is never looked at again.
        link = self.link._impl
        delivery = cproton.pn_delivery(link, tag if tag is not None else self.next_tag())
        sent = cproton.pn_link_send(link, payload)
        if sent < 0:
            raise LinkException(f"sending {len(payload)} bytes failed: proton error {sent}")
        cproton.pn_link_advance(link)
        cproton.pn_delivery_settle(delivery)

    def detach(self, name: str, description: str) -> None:
        """End the link from our side with an error the SDK maps to an exception."""
        self.on_close()
        self.ctx.endpoints.discard(self)
        self.link.fed_endpoint = None
        self.link.condition = condition(name, description)
        self.link.close()


def mirror_termini(link: Any) -> None:
    """Answer an attach with the client's own source and target: the link exists as asked."""
    link.source.address = link.remote_source.address
    link.target.address = link.remote_target.address


def refuse(link: Any, name: str, description: str) -> None:
    """Refuse an attach as AMQP 1.0 §2.6.3 says and Azure does: an attach whose terminus on our side
    is null (the source when we would send, the target when we would receive), then a detach carrying
    the error. The SDKs then fail the link with the error instead of believing it opened."""
    ours = link.source if link.is_sender else link.target
    ours.type = Terminus.UNSPECIFIED
    other = link.target if link.is_sender else link.source
    other.address = (link.remote_target if link.is_sender else link.remote_source).address
    link.open()
    link.condition = condition(name, description)
    link.close()


def accept(delivery: Delivery) -> None:
    delivery.update(Delivery.ACCEPTED)
    delivery.settle()


def reject(delivery: Delivery, name: str, description: str) -> None:
    delivery.local.condition = condition(name, description)
    delivery.update(Delivery.REJECTED)
    delivery.settle()


def reply(
    ctx: ConnectionContext,
    link: Link,
    request: Message,
    status: int,
    description: str,
    body: Any = None,
    error: str | None = None,
) -> None:
    """Answer a CBS or management request on the reply link of its session.

    Both status naming styles are sent: CBS and Event Hubs read ``status-code`` while
    the Service Bus management link reads ``statusCode``.
    """
    address = str(request.reply_to or link.remote_target.address)
    reply_link = ctx.reply_link(link.session, address)
    if reply_link is None:
        logger.warning("no reply link for %r on this session; dropping reply", address)
        return
    properties: dict[str, Any] = {
        "status-code": status,
        "status-description": description,
        "statusCode": status,
        "statusDescription": description,
    }
    if error is not None:
        properties["errorCondition"] = symbol(error)
        properties["error-condition"] = symbol(error)
    response = Message(body=body, properties=properties, correlation_id=request.id)
    endpoint: Endpoint | None = getattr(reply_link, "fed_endpoint", None)
    tag = endpoint.next_tag() if endpoint else b"r"
    delivery = reply_link.delivery(tag)  # type: ignore[arg-type]  # binary tags are fine
    reply_link.send(response.encode())
    reply_link.advance()
    delivery.settle()


def decode_request(payload: bytes) -> Message:
    message = Message()
    message.decode(payload)
    return message
