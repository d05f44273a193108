"""Session-enabled queues: session receivers, exclusive session locks, session state."""

from __future__ import annotations

import pytest
from azure.servicebus import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import ServiceBusError

pytestmark = pytest.mark.timeout(60)

CONFIG = {"namespaces": [{"name": "ns", "queues": [{"name": "sq", "requiresSession": True}]}]}


@pytest.fixture
def session_cs(emulator_factory) -> str:
    return emulator_factory(CONFIG).connection_string()


def send_sessions(client: ServiceBusClient) -> None:
    with client.get_queue_sender("sq") as sender:
        sender.send_messages(
            [
                ServiceBusMessage("a1", session_id="a"),
                ServiceBusMessage("b1", session_id="b"),
                ServiceBusMessage("a2", session_id="a"),
            ]
        )


def test_session_receiver_gets_only_its_session_in_order(session_cs):
    with ServiceBusClient.from_connection_string(session_cs) as client:
        send_sessions(client)
        with client.get_queue_receiver("sq", session_id="a") as receiver:
            messages = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            for message in messages:
                receiver.complete_message(message)
            assert receiver.session.session_id == "a"
            assert receiver.session.locked_until_utc is not None
    assert [(str(m), m.session_id) for m in messages] == [("a1", "a"), ("a2", "a")]


def test_next_available_session_picks_a_session_with_messages(session_cs):
    with ServiceBusClient.from_connection_string(session_cs) as client:
        send_sessions(client)
        with client.get_queue_receiver("sq", session_id=NEXT_AVAILABLE_SESSION) as receiver:
            (first,) = receiver.receive_messages(max_wait_time=5)
            receiver.complete_message(first)
            session_id = receiver.session.session_id
    assert session_id == first.session_id == "a"


def test_a_locked_session_cannot_be_taken_by_a_second_receiver(session_cs):
    with ServiceBusClient.from_connection_string(session_cs) as client:
        send_sessions(client)
        with client.get_queue_receiver("sq", session_id="b") as holder:
            (message,) = holder.receive_messages(max_wait_time=5)
            with pytest.raises(ServiceBusError), client.get_queue_receiver("sq", session_id="b") as rival:
                rival.receive_messages(max_wait_time=1)
            holder.complete_message(message)


def test_session_state_and_lock_renewal(session_cs):
    with ServiceBusClient.from_connection_string(session_cs) as client:
        send_sessions(client)
        with client.get_queue_receiver("sq", session_id="a") as receiver:
            assert receiver.session.get_state() is None
            receiver.session.set_state(b"checkpoint-1")
            assert receiver.session.get_state() == b"checkpoint-1"
            before = receiver.session.locked_until_utc
            assert receiver.session.renew_lock() >= before


def test_plain_receiver_is_refused_on_a_session_queue(session_cs):
    client = ServiceBusClient.from_connection_string(session_cs, retry_total=0)
    with client, pytest.raises(ServiceBusError), client.get_queue_receiver("sq") as receiver:
        receiver.receive_messages(max_wait_time=1)


@pytest.mark.asyncio
async def test_async_session_receiver(session_cs):
    async with AsyncServiceBusClient.from_connection_string(session_cs) as client:
        async with client.get_queue_sender("sq") as sender:
            await sender.send_messages(ServiceBusMessage("x", session_id="s1"))
        async with client.get_queue_receiver("sq", session_id="s1") as receiver:
            (message,) = await receiver.receive_messages(max_wait_time=5)
            await receiver.complete_message(message)
    assert str(message) == "x"
