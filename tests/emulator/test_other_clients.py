"""What AMQP clients other than the Python SDKs rely on, checked with a bare AMQP 1.0 client (proton) doing
what the JavaScript SDKs (rhea) do on the wire: a ``$cbs`` reply link named by the request's reply-to, a
token for ``<entity>/$management``, a message without an id, ``modified`` without ``delivery-failed``, and
a ``close`` that waits for the broker's own.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from proton import Collector, Connection, Delivery, Endpoint, Message, Transport
from proton.utils import BlockingConnection, LinkDetached

from federator_contract.emulatorconfig import QueueConfig
from federator_emulator import auth
from federator_emulator.amqp.messages import AmqpInbound
from federator_emulator.amqp.servicebus import settle
from federator_emulator.state.journal import NullJournal
from federator_emulator.state.servicebus import Queue

TIMEOUT = 10.0


def amqp_url(emulator: Any) -> str:
    ns = emulator.namespace()
    return f"amqp://{ns.host}:{ns.amqp_port}"


def sas_token(emulator: Any, path: str) -> str:
    ns = emulator.namespace()
    key = emulator.call(lambda: emulator.state().keys["RootManageSharedAccessKey"])
    resource = f"sb://{ns.host}:{ns.amqp_port}/{path}"
    return auth.generate_sas_token(resource, "RootManageSharedAccessKey", key, int(time.time()) + 600)


@contextmanager
def connected(emulator: Any) -> Iterator[BlockingConnection]:
    connection = BlockingConnection(
        amqp_url(emulator), timeout=TIMEOUT, sasl_enabled=True, allowed_mechs="ANONYMOUS"
    )
    try:
        yield connection
    finally:
        connection.close()


def request(connection: BlockingConnection, node: str, message: Message, reply_link: str) -> Message:
    """Send ``message`` to ``node`` and return the reply the broker sends to the link named ``reply_link``.

    Like rhea, the reply receiver has a name and a source, and no target address."""
    receiver = connection.create_receiver(node, name=reply_link, credit=10)
    sender = connection.create_sender(node, name=f"request-{uuid.uuid4()}")
    message.reply_to = reply_link
    message.id = str(uuid.uuid4())
    sender.send(message)
    return receiver.receive(timeout=TIMEOUT)  # replies come settled


def put_token(connection: BlockingConnection, emulator: Any, path: str) -> Message:
    audience = f"sb://{emulator.namespace().host}/{path}"
    message = Message(
        body=sas_token(emulator, path),
        properties={"operation": "put-token", "type": "servicebus.windows.net:sastoken", "name": audience},
    )
    return request(connection, "$cbs", message, reply_link=f"cbs-{uuid.uuid4()}")


def test_a_cbs_reply_goes_to_the_link_named_by_the_requests_reply_to(emulator):
    with connected(emulator) as connection:
        reply = put_token(connection, emulator, "q1")
    assert reply.properties["status-code"] == 202


def test_a_token_for_an_entitys_management_node_authorizes_its_management_operations_only(emulator):
    with connected(emulator) as connection:
        assert put_token(connection, emulator, "q1/$management").properties["status-code"] == 202
        peek = Message(
            body={"from-sequence-number": 0, "message-count": 1},
            properties={"operation": "com.microsoft:peek-message"},
        )
        reply = request(connection, "q1/$management", peek, reply_link=f"mgmt-{uuid.uuid4()}")
        assert reply.properties["statusCode"] == 204  # no messages, and no refusal
        with pytest.raises(LinkDetached, match="Send"):
            connection.create_sender("q1")  # the entity itself is not covered


def test_a_message_sent_without_an_id_is_given_one_by_the_broker(emulator):
    with connected(emulator) as connection:
        put_token(connection, emulator, "q1")
        connection.create_sender("q1").send(Message(body="anonymous"))
        receiver = connection.create_receiver("q1", credit=1)
        message = receiver.receive(timeout=TIMEOUT)
        receiver.accept()
    assert message.body == "anonymous"
    assert isinstance(message.id, str) and len(message.id) == 32
    int(message.id, 16)  # a GUID in hex without dashes, as Service Bus assigns


@pytest.mark.parametrize("delivery_failed", [False, True])
def test_modified_without_undeliverable_here_abandons_and_counts_the_delivery(delivery_failed):
    queue = Queue(QueueConfig(name="q", max_delivery_count=2), NullJournal(), time.time)
    queue.send(
        SimpleNamespace(payload=b"m", message_id="m1", session_id=None, ttl_seconds=None, scheduled_at=None)
    )
    first = queue.receive(peek_lock=True)
    assert first is not None and first.lock_token is not None
    outcome = SimpleNamespace(undeliverable=False, failed=delivery_failed, annotations=None, condition=None)
    settle(queue, first.lock_token, Delivery.MODIFIED, outcome)
    second = queue.receive(peek_lock=True)
    assert second is not None and second.delivery_count == 1
    assert second.lock_token is not None
    settle(queue, second.lock_token, Delivery.MODIFIED, outcome)
    assert queue.receive(peek_lock=True) is None
    assert queue.dead_letter is not None
    dead = queue.dead_letter.receive(peek_lock=False)
    assert dead is not None and dead.dead_letter_reason == "MaxDeliveryCountExceeded"


def _pump(sock: socket.socket, transport: Transport, until: Any) -> bool:
    """Move bytes both ways until ``until()`` holds or the broker ends the stream."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and not until():
        while transport.pending() > 0:
            data = transport.peek(transport.pending())
            assert data is not None
            sock.sendall(data)
            transport.pop(len(data))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        if not data:
            transport.close_tail()
            break
        transport.push(data)
    return bool(until())


def test_the_broker_answers_a_close_with_its_own_before_it_ends_the_connection(emulator):
    ns = emulator.namespace()
    with socket.create_connection((ns.host, ns.amqp_port), timeout=0.5) as sock:
        transport = Transport()
        transport.sasl().allowed_mechs("ANONYMOUS")
        connection = Connection()
        connection.collect(Collector())
        transport.bind(connection)
        connection.open()
        assert _pump(sock, transport, lambda: connection.state & Endpoint.REMOTE_ACTIVE)
        connection.close()
        # AMQP 1.0 §2.4.3: the peer answers close with close; rhea's close() waits for it.
        assert _pump(sock, transport, lambda: connection.state & Endpoint.REMOTE_CLOSED)


def test_a_subscriptions_rules_are_added_listed_and_removed_over_its_management_node(emulator):
    node = "t1/subscriptions/all/$management"

    def operation(name: str, body: dict[str, Any]) -> Message:
        message = Message(body=body, properties={"operation": f"com.microsoft:{name}"})
        return request(connection, node, message, reply_link=f"rules-{uuid.uuid4()}")

    with connected(emulator) as connection:
        put_token(connection, emulator, "t1")
        description = {
            "sql-filter": {"expression": "amount > 10"},
            "sql-rule-action": {"expression": "SET a = 1"},
        }
        added = operation("add-rule", {"rule-name": "big", "rule-description": description})
        assert added.properties["statusCode"] == 200
        again = operation("add-rule", {"rule-name": "big", "rule-description": description})
        assert again.properties["statusCode"] == 409
        listed = operation("enumerate-rules", {"top": 10, "skip": 0})
        removed = operation("remove-rule", {"rule-name": "$Default"})
        missing = operation("remove-rule", {"rule-name": "$Default"})
    names = [rule["rule-description"].value[2] for rule in listed.body["rules"]]
    assert names == ["$Default", "big"]
    sql_filter, action, _ = listed.body["rules"][1]["rule-description"].value
    assert (sql_filter.value[0], action.value[0]) == ("amount > 10", "SET a = 1")
    assert (removed.properties["statusCode"], missing.properties["statusCode"]) == (200, 404)
    rules = emulator.call(lambda: sorted(emulator.state().topic("t1").subscription("all").rules))
    assert rules == ["big"]


class RecordingJournal(NullJournal):
    def __init__(self) -> None:
        self.records: list[tuple[dict[str, Any], bytes]] = []

    def write(self, meta: dict[str, Any], payload: bytes = b"") -> None:
        self.records.append((meta, payload))


def test_properties_to_modify_are_set_on_the_abandoned_message_and_survive_a_restart():
    journal = RecordingJournal()
    queue = Queue(QueueConfig(name="q"), journal, time.time)
    queue.send(AmqpInbound(Message(body="m", id="m1", properties={"kept": 1}).encode()))
    first = queue.receive(peek_lock=True)
    assert first is not None and first.lock_token is not None
    changes = {"attempt": "one"}
    outcome = SimpleNamespace(undeliverable=False, failed=False, annotations=changes, condition=None)
    settle(queue, first.lock_token, Delivery.MODIFIED, outcome)

    def application_properties(entity: Queue) -> dict[str, Any]:
        message = entity.receive(peek_lock=False)
        assert message is not None
        decoded = Message()
        decoded.decode(message.payload)
        return dict(decoded.properties)

    restarted = Queue(QueueConfig(name="q"), NullJournal(), time.time)
    for meta, payload in journal.records:
        restarted.replay(meta, payload)
    assert application_properties(queue) == application_properties(restarted) == {"kept": 1, "attempt": "one"}
