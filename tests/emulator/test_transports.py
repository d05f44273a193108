"""Transports as on Azure: AMQP over TLS and AMQP over WebSockets on the namespace's TLS port (which also
serves HTTPS management), beside plain AMQP for development-emulator connection strings.

With TLS the SDKs ignore the port in the namespace and dial Azure's 5671 (443 for WebSockets), so the
tests pass the emulator's port as ``custom_endpoint_address``, an option the SDKs document for gateways."""

from __future__ import annotations

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub import TransportType as EventHubTransport
from azure.eventhub.aio import EventHubProducerClient as AsyncEventHubProducerClient
from azure.eventhub.exceptions import ConnectError
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus import TransportType as ServiceBusTransport
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import ServiceBusConnectionError

from federator_contract.emulatorconfig import DEFAULT_KEY_NAME

pytestmark = pytest.mark.timeout(90)

TRANSPORTS = ["Amqp", "AmqpOverWebsocket"]


def key(emulator) -> AzureNamedKeyCredential:
    """The namespace's own key (every namespace of the emulator has one of its own)."""
    return AzureNamedKeyCredential(DEFAULT_KEY_NAME, emulator.key())


def options(emulator, transport: str, trust: bool = True) -> dict:
    ns = emulator.namespace()
    found = {
        "custom_endpoint_address": ns.custom_endpoint_address,
        "transport_type": ServiceBusTransport[transport],
    }
    return {**found, "connection_verify": str(ns.ca_path)} if trust else found


def hub_events(emulator) -> int:
    partitions = emulator.state().event_hub("hub1").partitions
    return emulator.call(lambda: sum(p.next_sequence_number for p in partitions.values()))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_both_sdks_over_tls_and_websockets(emulator, transport):
    namespace = emulator.namespace().fully_qualified_namespace
    eh_options = {**options(emulator, transport), "transport_type": EventHubTransport[transport]}
    with EventHubProducerClient(namespace, "hub1", key(emulator), **eh_options) as producer:
        producer.send_batch([EventData("one"), EventData("two")])
    assert hub_events(emulator) == 2
    with ServiceBusClient(namespace, key(emulator), **options(emulator, transport)) as client:
        with client.get_queue_sender("q1") as sender:
            sender.send_messages(ServiceBusMessage(transport))
        with client.get_queue_receiver("q1") as receiver:
            (message,) = receiver.receive_messages(max_wait_time=5)
            receiver.complete_message(message)
    assert str(message) == transport


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_async_clients_over_tls_and_websockets(emulator, transport):
    namespace = emulator.namespace().fully_qualified_namespace
    eh_options = {**options(emulator, transport), "transport_type": EventHubTransport[transport]}
    async with AsyncEventHubProducerClient(namespace, "hub1", key(emulator), **eh_options) as producer:
        await producer.send_batch([EventData("one")])
    async with AsyncServiceBusClient(namespace, key(emulator), **options(emulator, transport)) as client:
        async with client.get_queue_sender("q1") as sender:
            await sender.send_messages(ServiceBusMessage(transport))
        async with client.get_queue_receiver("q1") as receiver:
            (message,) = await receiver.receive_messages(max_wait_time=5)
            await receiver.complete_message(message)
    assert str(message) == transport
    assert hub_events(emulator) == 1


def test_a_client_that_does_not_trust_the_emulator_ca_cannot_connect(emulator):
    namespace = emulator.namespace().fully_qualified_namespace
    endpoint = emulator.namespace().custom_endpoint_address
    amqp = EventHubTransport.Amqp
    producer = EventHubProducerClient(
        namespace, "hub1", key(emulator), custom_endpoint_address=endpoint, transport_type=amqp, retry_total=0
    )
    with producer, pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        producer.get_partition_ids()
    untrusted = options(emulator, "AmqpOverWebsocket", trust=False)
    client = ServiceBusClient(namespace, key(emulator), retry_total=0, **untrusted)
    with client, pytest.raises(ServiceBusConnectionError), client.get_queue_sender("q1") as sender:
        sender.send_messages(ServiceBusMessage("x"))
