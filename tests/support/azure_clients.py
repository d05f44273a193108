"""The real Azure SDK clients pointed at an emulator (ATOM, ARM and DNS management), and reading what
Service Bus subscriptions hold."""

from __future__ import annotations

import re
from typing import Any

from azure.mgmt.dns import DnsManagementClient
from azure.mgmt.servicebus import ServiceBusManagementClient
from azure.servicebus import ServiceBusClient, ServiceBusReceivedMessage
from azure.servicebus.management import ServiceBusAdministrationClient

from federator_contract.emulatorconfig import DEFAULT_KEY_NAME
from federator_emulator.testing import EmulatorCredential


def drain_subscription(
    client: ServiceBusClient, topic: str, subscription: str, expected: int
) -> list[ServiceBusReceivedMessage]:
    """Receive and complete exactly ``expected`` messages, then check nothing else is there.

    Fan-out happens before the send is acknowledged, so an empty peek proves absence
    without waiting for a receive timeout.
    """
    messages: list[ServiceBusReceivedMessage] = []
    with client.get_subscription_receiver(topic, subscription) as receiver:
        while len(messages) < expected:
            batch = receiver.receive_messages(max_message_count=expected - len(messages), max_wait_time=5)
            assert batch, f"{subscription}: got {len(messages)} of {expected} messages"
            messages += batch
        for message in messages:
            receiver.complete_message(message)
        assert receiver.peek_messages(max_message_count=10) == [], f"{subscription}: unexpected messages"
    return messages


def text_properties(message: ServiceBusReceivedMessage) -> dict[str, Any]:
    """A received message's application properties with text keys and string values."""

    def text(value: Any) -> Any:
        return value.decode() if isinstance(value, bytes) else value

    return {text(k): text(v) for k, v in (message.application_properties or {}).items()}


def management_connection_string(emulator: Any, namespace: str | None = None) -> str:
    """A namespace's HTTPS (ATOM) endpoint with its own Manage key, for ``ServiceBusAdministrationClient``."""
    host = emulator.namespace(namespace).fully_qualified_namespace
    key = emulator.key(namespace)
    return f"Endpoint=sb://{host};SharedAccessKeyName={DEFAULT_KEY_NAME};SharedAccessKey={key}"


def with_key(connection_string: str, key: str) -> str:
    """The connection string with another ``SharedAccessKey`` (a wrong one, or another namespace's)."""
    return re.sub(r"(?<=SharedAccessKey=)[^;]*", lambda _: key, connection_string)


def admin_client(emulator: Any, namespace: str | None = None) -> ServiceBusAdministrationClient:
    return ServiceBusAdministrationClient.from_connection_string(
        management_connection_string(emulator, namespace), connection_verify=str(emulator.ca_path)
    )


def arm_client(emulator: Any) -> ServiceBusManagementClient:
    """``azure-mgmt-servicebus`` on the emulator's ARM endpoint, signed in as its administrator."""
    return ServiceBusManagementClient(
        EmulatorCredential(emulator),
        emulator.namespace().arm.subscription_id,
        base_url=emulator.arm_endpoint,
        connection_verify=str(emulator.ca_path),
    )


def dns_client(emulator: Any) -> DnsManagementClient:
    """``azure-mgmt-dns`` on the emulator's ARM endpoint, signed in as its administrator."""
    return DnsManagementClient(
        EmulatorCredential(emulator),
        emulator.namespace().arm.subscription_id,
        base_url=emulator.arm_endpoint,
        connection_verify=str(emulator.ca_path),
    )
