"""AutoLockRenewer on several messages at once: its concurrent renew-lock requests reuse delivery-ids
(the SDK numbers transfers from several threads), which Azure tolerates and so must the emulator."""

from __future__ import annotations

import asyncio
import struct
import time
from datetime import UTC, datetime

import pytest
from azure.servicebus import AutoLockRenewer, ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage
from azure.servicebus.aio import AutoLockRenewer as AsyncAutoLockRenewer
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient

from federator_emulator.amqp.sequencing import DeliveryIds
from federator_emulator.testing import EmulatorFactory

pytestmark = pytest.mark.timeout(120)

# The renewers renew a lock 10 s before it expires when it lasts longer than 10.5 s; a shorter one gets a
# quarter of what was left at registration, which a receive or a renewer thread late on a busy host used
# up (4 s locks lost a lock there). 11 s leaves them 10 s, and the messages are held past their first
# expiry, so every complete succeeds only if every lock was renewed.
LOCK_SECONDS = 11
COUNT = 10
CONFIG = {"namespaces": [{"name": "ns", "queues": [{"name": "q", "lockDurationSeconds": LOCK_SECONDS}]}]}


def past_their_first_locks(messages: list[ServiceBusReceivedMessage]) -> float:
    """Seconds until a second after the latest of the locks the messages were received with."""
    latest = max(m.locked_until_utc for m in messages if m.locked_until_utc is not None)
    return max(0.0, (latest - datetime.now(UTC)).total_seconds() + 1)


def renewed(messages: list[ServiceBusReceivedMessage], first_locks: list[datetime | None]) -> list[str]:
    """The messages whose lock the broker extended (the renewer keeps each message's new expiry)."""
    return [
        str(m)
        for m, first in zip(messages, first_locks, strict=True)
        if first and m.locked_until_utc and m.locked_until_utc > first
    ]


def test_auto_lock_renewer_keeps_the_locks_of_several_messages(emulator_factory: EmulatorFactory) -> None:
    cs = emulator_factory(CONFIG).connection_string()
    with ServiceBusClient.from_connection_string(cs) as client:
        with client.get_queue_sender("q") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(COUNT)])
        with AutoLockRenewer() as renewer, client.get_queue_receiver("q") as receiver:
            messages: list[ServiceBusReceivedMessage] = []
            while len(messages) < COUNT:  # a loaded host may hand them over in several receives
                received = receiver.receive_messages(max_message_count=COUNT - len(messages), max_wait_time=5)
                assert received, f"only {len(messages)} of {COUNT} messages arrived"
                for message in received:
                    renewer.register(receiver, message, max_lock_renewal_duration=60)
                messages += received
            first_locks = [m.locked_until_utc for m in messages]
            time.sleep(past_their_first_locks(messages))
            assert sorted(renewed(messages, first_locks)) == sorted(str(m) for m in messages)
            for message in messages:
                receiver.complete_message(message)  # raises MessageLockLostError if a lock was lost
        with client.get_queue_receiver("q") as receiver:
            assert receiver.receive_messages(max_wait_time=1) == []
    assert sorted(str(m) for m in messages) == sorted(f"m{i}" for i in range(COUNT))


@pytest.mark.asyncio
async def test_async_auto_lock_renewer_keeps_the_locks_of_several_messages(
    emulator_factory: EmulatorFactory,
) -> None:
    cs = emulator_factory(CONFIG).connection_string()
    async with AsyncServiceBusClient.from_connection_string(cs) as client:
        async with client.get_queue_sender("q") as sender:
            await sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(COUNT)])
        renewer = AsyncAutoLockRenewer()
        async with renewer, client.get_queue_receiver("q") as receiver:
            messages: list[ServiceBusReceivedMessage] = []
            while len(messages) < COUNT:
                received = await receiver.receive_messages(
                    max_message_count=COUNT - len(messages), max_wait_time=5
                )
                assert received, f"only {len(messages)} of {COUNT} messages arrived"
                for message in received:
                    renewer.register(receiver, message, max_lock_renewal_duration=60)
                messages += received
            first_locks = [m.locked_until_utc for m in messages]
            await asyncio.sleep(past_their_first_locks(messages))
            assert sorted(renewed(messages, first_locks)) == sorted(str(m) for m in messages)
            for message in messages:
                await receiver.complete_message(message)
    assert sorted(str(m) for m in messages) == sorted(f"m{i}" for i in range(COUNT))


def transfer(channel: int, delivery_id: int, tag: bytes, settled: bool = False) -> bytes:
    """A transfer frame as a client sends it (handle 0, the delivery-id as a smalluint)."""
    fields = b"\x43" + bytes([0x52, delivery_id]) + b"\xa0" + bytes([len(tag)]) + tag + b"\x43"
    fields += b"\x41" if settled else b"\x42"
    body = b"\x00\x53\x14\xc0" + bytes([len(fields) + 1, 5]) + fields + b"payload"
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def accepted_disposition(channel: int, delivery_id: int) -> bytes:
    fields = b"\x41" + bytes([0x52, delivery_id]) + b"\x40\x41" + b"\x00\x53\x24\x45"
    body = b"\x00\x53\x15\xc0" + bytes([len(fields) + 1, 5]) + fields
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def test_a_reused_delivery_id_is_renumbered_and_its_disposition_names_the_clients_id() -> None:
    ids = DeliveryIds()
    first, duplicate = transfer(0, 1, b"a"), transfer(0, 1, b"b")
    passed = ids.incoming(first + duplicate[:10])  # the duplicate arrives in two reads
    assert passed == first
    renumbered = ids.incoming(duplicate[10:])
    assert renumbered != duplicate and b"\x52\x02" in renumbered and renumbered.endswith(b"payload")
    # Our disposition for delivery 2 goes back as one for the client's delivery 1.
    assert ids.outgoing(accepted_disposition(0, 2)) == [accepted_disposition(0, 1)]
    assert ids.outgoing(accepted_disposition(0, 2)) == [accepted_disposition(0, 2)]  # settled: forgotten


def test_frames_in_sequence_pass_through_untouched() -> None:
    ids = DeliveryIds()
    frames = transfer(0, 5, b"a") + transfer(0, 6, b"b", settled=True) + transfer(1, 0, b"c")
    assert ids.incoming(frames) is frames
    assert ids.outgoing(accepted_disposition(0, 5)) == [accepted_disposition(0, 5)]
