"""Service Bus queues, settlement and message lifetime through the real azure-servicebus clients."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusMessageState,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
)
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import MessageSizeExceededError

pytestmark = pytest.mark.timeout(60)


def queue_config(**queue) -> dict:
    return {"namespaces": [{"name": "ns", "queues": [{"name": "q", **queue}]}]}


@pytest.fixture
def sb(emulator):
    with ServiceBusClient.from_connection_string(emulator.connection_string()) as client:
        yield client


def test_send_and_receive_with_broker_properties(sb):
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages(ServiceBusMessage("one", message_id="m1", application_properties={"k": "v"}))
        sender.send_messages([ServiceBusMessage("two"), ServiceBusMessage("three")])
    with sb.get_queue_receiver("q1") as receiver:
        messages = receiver.receive_messages(max_message_count=3, max_wait_time=5)
        locked_until = messages[0].locked_until_utc
        for message in messages:
            receiver.complete_message(message)
        assert receiver.peek_messages(max_message_count=10, sequence_number=1) == []  # completed: gone
    assert locked_until > datetime.now(UTC)
    assert [str(m) for m in messages] == ["one", "two", "three"]
    assert [m.sequence_number for m in messages] == [1, 2, 3]
    assert messages[0].message_id == "m1"
    assert messages[0].application_properties == {b"k": b"v"}
    assert messages[0].delivery_count == 0
    assert messages[0].enqueued_time_utc is not None


def test_abandoned_message_is_redelivered_with_a_higher_delivery_count(sb):
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages(ServiceBusMessage("x"))
    with sb.get_queue_receiver("q1") as receiver:
        (first,) = receiver.receive_messages(max_wait_time=5)
        receiver.abandon_message(first)
        (again,) = receiver.receive_messages(max_wait_time=5)
        receiver.complete_message(again)
    assert again.sequence_number == first.sequence_number
    assert again.delivery_count == 1


def test_dead_lettered_message_carries_reason_and_description(sb):
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages(ServiceBusMessage("bad"))
    with sb.get_queue_receiver("q1") as receiver:
        (message,) = receiver.receive_messages(max_wait_time=5)
        receiver.dead_letter_message(message, reason="invalid", error_description="cannot parse")
    with sb.get_queue_receiver("q1", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        (dead,) = dlq.receive_messages(max_wait_time=5)
        dlq.complete_message(dead)
    assert str(dead) == "bad"
    assert dead.dead_letter_reason == "invalid"
    assert dead.dead_letter_error_description == "cannot parse"
    assert dead.dead_letter_source == "q1"


def test_deferred_message_is_received_by_sequence_number(sb):
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages(ServiceBusMessage("later"))
    with sb.get_queue_receiver("q1") as receiver:
        (message,) = receiver.receive_messages(max_wait_time=5)
        receiver.defer_message(message)
        # The SDK peeks from after the last received sequence number unless told otherwise.
        (peeked,) = receiver.peek_messages(max_message_count=5, sequence_number=1)
        assert peeked.state == ServiceBusMessageState.DEFERRED
        (deferred,) = receiver.receive_deferred_messages([message.sequence_number])
        receiver.complete_message(deferred)
        assert receiver.peek_messages(max_message_count=10, sequence_number=1) == []
    assert str(deferred) == "later"


def test_receive_and_delete_removes_on_delivery(sb):
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with sb.get_queue_receiver("q1", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as receiver:
        messages = receiver.receive_messages(max_message_count=2, max_wait_time=5)
        assert [str(m) for m in messages] == ["a", "b"]
        assert receiver.peek_messages(max_message_count=10, sequence_number=1) == []


def test_peek_does_not_lock_or_remove(sb):
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with sb.get_queue_receiver("q1") as receiver:
        peeked = receiver.peek_messages(max_message_count=10, sequence_number=1)
        received = receiver.receive_messages(max_message_count=2, max_wait_time=5)
    assert [m.sequence_number for m in peeked] == [m.sequence_number for m in received] == [1, 2]


def test_lock_renewal_extends_the_lock(emulator_factory):
    emu = emulator_factory(queue_config(lockDurationSeconds=2))
    with ServiceBusClient.from_connection_string(emu.connection_string()) as sb:
        with sb.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage("x"))
        with sb.get_queue_receiver("q") as receiver:
            (message,) = receiver.receive_messages(max_wait_time=5)
            before = message.locked_until_utc
            time.sleep(0.5)  # the new expiry must be measurably later than the first one
            after = receiver.renew_message_lock(message)
            assert after > before
            receiver.complete_message(message)


def test_expired_lock_redelivers_and_max_delivery_count_dead_letters(emulator_factory):
    emu = emulator_factory(queue_config(lockDurationSeconds=1, maxDeliveryCount=2))
    with ServiceBusClient.from_connection_string(emu.connection_string()) as sb:
        with sb.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage("poison"))
        with sb.get_queue_receiver("q") as receiver:
            (first,) = receiver.receive_messages(max_wait_time=5)
            # Never settled: the lock expires and the message comes back.
            (second,) = receiver.receive_messages(max_wait_time=5)
            assert second.sequence_number == first.sequence_number
            assert second.delivery_count == 1
            with pytest.raises(Exception, match=r"(?i)lock"):
                receiver.complete_message(first)
        with sb.get_queue_receiver("q", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            (dead,) = dlq.receive_messages(max_wait_time=5)
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert str(dead) == "poison"


def test_expired_message_is_dead_lettered_when_the_queue_says_so(emulator_factory):
    emu = emulator_factory(queue_config(deadLetteringOnMessageExpiration=True))
    with ServiceBusClient.from_connection_string(emu.connection_string()) as sb:
        with sb.get_queue_sender("q") as sender:
            # The SDK sends whole seconds of TTL.
            sender.send_messages(ServiceBusMessage("short-lived", time_to_live=timedelta(seconds=1)))
            sender.send_messages(ServiceBusMessage("long-lived"))
        with sb.get_queue_receiver("q", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            (dead,) = dlq.receive_messages(max_wait_time=5)
        with sb.get_queue_receiver("q") as receiver:
            remaining = receiver.receive_messages(max_message_count=1, max_wait_time=5)
            peeked = receiver.peek_messages(max_message_count=5, sequence_number=1)
            assert [m.sequence_number for m in peeked] == [m.sequence_number for m in remaining]
    assert str(dead) == "short-lived"
    assert dead.dead_letter_reason == "TTLExpiredException"
    assert [str(m) for m in remaining] == ["long-lived"]


def test_expired_message_is_dropped_by_default(emulator_factory):
    emu = emulator_factory(queue_config(defaultMessageTtlSeconds=0.3))
    with ServiceBusClient.from_connection_string(emu.connection_string()) as sb:
        with sb.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage("gone"))
        time.sleep(0.5)  # let the queue's default TTL pass
        with sb.get_queue_receiver("q") as receiver:
            assert receiver.peek_messages(max_message_count=5, sequence_number=1) == []
        with sb.get_queue_receiver("q", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            assert dlq.peek_messages(max_message_count=5, sequence_number=1) == []


def test_scheduled_message_appears_at_its_time_and_can_be_cancelled(sb):
    due = datetime.now(UTC) + timedelta(seconds=1)
    with sb.get_queue_sender("q1") as sender:
        (kept,) = sender.schedule_messages(ServiceBusMessage("scheduled"), due)
        (cancelled,) = sender.schedule_messages(ServiceBusMessage("cancelled"), due)
        sender.cancel_scheduled_messages(cancelled)
    with sb.get_queue_receiver("q1") as receiver:
        (peeked,) = receiver.peek_messages(max_message_count=10, sequence_number=1)
        assert peeked.sequence_number == kept
        assert peeked.scheduled_enqueue_time_utc is not None
        (message,) = receiver.receive_messages(max_wait_time=5)
        received_at = datetime.now(UTC)
        receiver.complete_message(message)
    assert str(message) == "scheduled"
    assert received_at >= due - timedelta(milliseconds=100)


def test_scheduled_enqueue_time_on_send_delays_delivery(sb):
    # Far enough ahead that the peek below still sees it scheduled on a busy machine (1.5 s was not,
    # at a load average of 12: sender and receiver links took longer than that to open).
    due = datetime.now(UTC) + timedelta(seconds=5)
    message = ServiceBusMessage("delayed")
    message.scheduled_enqueue_time_utc = due
    with sb.get_queue_sender("q1") as sender:
        sender.send_messages(message)
    with sb.get_queue_receiver("q1") as receiver:
        (peeked,) = receiver.peek_messages(max_message_count=5, sequence_number=1)
        assert peeked.state == ServiceBusMessageState.SCHEDULED
        (received,) = receiver.receive_messages(max_wait_time=15)
        received_at = datetime.now(UTC)
        receiver.complete_message(received)
    assert str(received) == "delayed"
    assert received_at >= due - timedelta(milliseconds=100)


def test_duplicate_message_ids_are_dropped_within_the_window(emulator_factory):
    emu = emulator_factory(queue_config(requiresDuplicateDetection=True, duplicateDetectionWindowSeconds=60))
    with ServiceBusClient.from_connection_string(emu.connection_string()) as sb:
        with sb.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage("first", message_id="same"))
            sender.send_messages(ServiceBusMessage("second", message_id="same"))
            sender.send_messages(ServiceBusMessage("other", message_id="different"))
        with sb.get_queue_receiver("q") as receiver:
            messages = receiver.peek_messages(max_message_count=5, sequence_number=1)
    assert [str(m) for m in messages] == ["first", "other"]


@pytest.mark.asyncio
async def test_async_client_settles_messages(emulator):
    async with AsyncServiceBusClient.from_connection_string(emulator.connection_string()) as sb:
        async with sb.get_queue_sender("q1") as sender:
            await sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
        async with sb.get_queue_receiver("q1") as receiver:
            first, second = await receiver.receive_messages(max_message_count=2, max_wait_time=5)
            await receiver.complete_message(first)
            await receiver.abandon_message(second)
            (again,) = await receiver.receive_messages(max_wait_time=5)
            await receiver.complete_message(again)
            assert await receiver.peek_messages(max_message_count=5, sequence_number=1) == []
    assert str(again) == "b" and again.delivery_count == 1


def test_a_namespace_with_a_smaller_message_size_limit_makes_batches_that_small(emulator_factory):
    config = {"namespaces": [{"name": "ns", "maxMessageSizeBytes": 262144, "queues": [{"name": "q"}]}]}
    emu = emulator_factory(config)
    with ServiceBusClient.from_connection_string(emu.connection_string()) as client:
        with client.get_queue_sender("q") as sender:
            batch = sender.create_message_batch()
            assert batch.max_size_in_bytes == 262144
            with pytest.raises(MessageSizeExceededError):
                batch.add_message(ServiceBusMessage(b"x" * 300_000))
            sender.send_messages(ServiceBusMessage(b"x" * 200_000))
        with client.get_queue_receiver("q") as receiver:
            (received,) = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            assert len(next(received.body)) == 200_000
