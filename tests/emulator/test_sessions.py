"""Session-enabled queues: session receivers, exclusive session locks, session state."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from azure.servicebus import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import OperationTimeoutError, ServiceBusError, SessionCannotBeLockedError

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
    with ServiceBusClient.from_connection_string(session_cs, retry_total=0) as client:
        send_sessions(client)
        with client.get_queue_receiver("sq", session_id="b") as holder:
            (message,) = holder.receive_messages(max_wait_time=5)
            # The refused attach has a null source, so the SDK fails the link with the service's error.
            with (
                pytest.raises(SessionCannotBeLockedError, match="locked by another receiver"),
                client.get_queue_receiver("sq", session_id="b") as rival,
            ):
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


def test_next_available_session_waits_the_requested_time_then_times_out(session_cs):
    client = ServiceBusClient.from_connection_string(session_cs, retry_total=0)
    started = time.monotonic()
    with (
        client,
        pytest.raises(OperationTimeoutError, match="no session of sq is available"),
        client.get_queue_receiver("sq", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=2) as receiver,
    ):
        receiver.receive_messages(max_wait_time=1)
    # Azure holds the attach until the requested time is up instead of refusing it at once.
    assert time.monotonic() - started >= 1.5


def test_next_available_session_is_granted_when_a_session_gets_a_message_while_waiting(session_cs):
    with ServiceBusClient.from_connection_string(session_cs) as client:

        def send_later() -> None:
            time.sleep(1.0)
            with client.get_queue_sender("sq") as sender:
                sender.send_messages(ServiceBusMessage("late", session_id="late"))

        sending = threading.Thread(target=send_later)
        sending.start()
        try:
            with client.get_queue_receiver(
                "sq", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=20
            ) as receiver:
                (message,) = receiver.receive_messages(max_wait_time=5)
                receiver.complete_message(message)
                session_id = receiver.session.session_id
        finally:
            sending.join()
    assert (session_id, str(message)) == ("late", "late")


@pytest.mark.asyncio
async def test_async_next_available_session_waits_for_a_session(session_cs):
    async with AsyncServiceBusClient.from_connection_string(session_cs) as client:

        async def send_later() -> None:
            await asyncio.sleep(1.0)
            async with client.get_queue_sender("sq") as sender:
                await sender.send_messages(ServiceBusMessage("late", session_id="late"))

        sending = asyncio.create_task(send_later())
        async with client.get_queue_receiver(
            "sq", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=20
        ) as receiver:
            (message,) = await receiver.receive_messages(max_wait_time=5)
            await receiver.complete_message(message)
            session_id = receiver.session.session_id
        await sending
    assert (session_id, str(message)) == ("late", "late")


def test_listing_sessions_gives_those_with_messages_or_state_and_those_updated_since(session_cs):
    with ServiceBusClient.from_connection_string(session_cs) as client:
        assert list(client.list_queue_sessions("sq")) == []
        send_sessions(client)  # sessions a and b have messages
        with client.get_queue_receiver("sq", session_id="a") as receiver:
            for message in receiver.receive_messages(max_wait_time=5, max_message_count=2):
                receiver.complete_message(message)
            before_state = datetime.now(UTC) - timedelta(seconds=1)
            receiver.session.set_state(b"kept")  # a keeps its state, though its messages are gone
        with client.get_queue_receiver("sq", session_id="c") as receiver:
            receiver.session.set_state(b"c")
        assert sorted(client.list_queue_sessions("sq")) == ["a", "b", "c"]
        assert sorted(client.list_queue_sessions("sq", state_updated_after=before_state)) == ["a", "c"]
        later = datetime.now(UTC) + timedelta(minutes=1)
        assert list(client.list_queue_sessions("sq", state_updated_after=later)) == []


@pytest.mark.asyncio
async def test_async_listing_subscription_sessions(emulator_factory):
    subscription = {"name": "s", "requiresSession": True}
    config = {"namespaces": [{"name": "ns", "topics": [{"name": "t", "subscriptions": [subscription]}]}]}
    cs = emulator_factory(config).connection_string()
    async with AsyncServiceBusClient.from_connection_string(cs) as client:
        async with client.get_topic_sender("t") as sender:
            await sender.send_messages([ServiceBusMessage("x", session_id=f"s{i}") for i in range(3)])
        sessions = [session async for session in client.list_subscription_sessions("t", "s")]
    assert sorted(sessions) == ["s0", "s1", "s2"]
