"""What a Service Bus queue of the emulator holds, for tests that publish to one."""

from __future__ import annotations

from azure.servicebus import ServiceBusClient


def queue_bodies(connection_string: str, queue: str) -> list[str]:
    """The bodies of up to 10 messages waiting in ``queue`` (peek-lock: they stay there)."""
    with (
        ServiceBusClient.from_connection_string(connection_string) as client,
        client.get_queue_receiver(queue, max_wait_time=3) as receiver,
    ):
        return [str(m) for m in receiver.receive_messages(max_message_count=10, max_wait_time=3)]
