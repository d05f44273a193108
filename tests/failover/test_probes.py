"""Probes and drain checks with the real SDKs against emulators: healthy members answer, stopped or silent
ones fail within the timeout, and a drain check sees what a Service Bus entity still holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from azure.servicebus import ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient

from federator.failover.connections import MemberConnection
from federator.failover.probes import EntityRef, Prober
from federator_emulator.testing import EmulatorFactory
from support.azure_clients import with_key
from support.sockets import unclosed_sockets

CONFIG = {
    "namespaces": [
        {
            "name": "weu",
            "eventHubs": [{"name": "orders-hub"}],
            "queues": [{"name": "orders"}, {"name": "audit"}],
            "topics": [{"name": "events", "subscriptions": [{"name": "all"}]}],
        }
    ]
}
QUEUE = EntityRef("queue", "orders")
NO_ANSWER = "no answer within the probe timeout"


@pytest_asyncio.fixture
async def clients() -> AsyncIterator[Prober]:
    found = Prober()
    yield found
    await found.close()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_running_member_is_healthy_for_each_kind_of_entity(
    emulator_factory: EmulatorFactory, clients: Prober
) -> None:
    member = MemberConnection(connection_string=emulator_factory(CONFIG).connection_string())
    for entity in (EntityRef("eventHub", "orders-hub"), QUEUE, EntityRef("subscription", "events", "all")):
        outcome = await clients.probe(member, entity, timeout=5)
        assert outcome.healthy, f"{entity}: {outcome.message}"
    missing = await clients.probe(member, EntityRef("queue", "nope"), timeout=5)
    assert not missing.healthy and "/nope' could not be found" in missing.message  # the broker's words


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_stopped_member_fails_fast_and_a_wrong_key_is_refused(
    emulator_factory: EmulatorFactory, clients: Prober
) -> None:
    emulator = emulator_factory(CONFIG)
    cs = emulator.connection_string()
    wrong_key = MemberConnection(connection_string=with_key(cs, "d3JvbmcK"))
    refused = await clients.probe(wrong_key, QUEUE, timeout=5)
    assert not refused.healthy and refused.message
    assert "d3JvbmcK" not in refused.message and "SharedAccessKey" not in refused.message

    member = MemberConnection(connection_string=cs)
    assert (await clients.probe(member, QUEUE, timeout=5)).healthy
    emulator.stop()
    for entity in (QUEUE, EntityRef("eventHub", "orders-hub")):
        outcome = await clients.probe(member, entity, timeout=5)
        assert not outcome.healthy and outcome.message
        # One attempt, failed as refused: the SDKs' own retries would wait out the probe's timeout.
        assert outcome.message != NO_ANSWER, f"{entity}: a refused connection must not wait for the timeout"


@pytest.mark.asyncio
async def test_a_member_that_never_answers_fails_at_the_timeout(clients: Prober) -> None:
    accepted: list[asyncio.StreamWriter] = []
    hang_ups: list[asyncio.TimerHandle] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Accepts the connection and never speaks AMQP; hangs up after five probe timeouts, so that a probe
        # still waiting by then reports the hang-up instead of its timeout.
        accepted.append(writer)
        hang_ups.append(asyncio.get_running_loop().call_later(5, writer.close))

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    member = MemberConnection(
        connection_string=f"Endpoint=sb://localhost:{port};SharedAccessKeyName=k;SharedAccessKey=eA==;"
        "UseDevelopmentEmulator=true"
    )
    async with server:
        outcome = await clients.probe(member, QUEUE, timeout=1)
        for hang_up in hang_ups:
            hang_up.cancel()
        for writer in accepted:
            writer.close()
            await writer.wait_closed()
    assert accepted, "the probe never connected"
    assert outcome == outcome.__class__(False, NO_ANSWER)
    assert unclosed_sockets() == [], "the probe left its socket to the garbage collector"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_drain_check_names_entities_that_still_hold_messages(
    emulator_factory: EmulatorFactory, clients: Prober
) -> None:
    cs = emulator_factory(CONFIG).connection_string()
    member = MemberConnection(connection_string=cs)
    entities = [QUEUE, EntityRef("queue", "audit"), EntityRef("subscription", "events", "all")]
    assert await clients.holding(member, entities, timeout=5) == []
    async with ServiceBusClient.from_connection_string(cs) as bus:
        async with bus.get_queue_sender("orders") as sender:
            await sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
        async with bus.get_topic_sender("events") as sender:
            await sender.send_messages(ServiceBusMessage("c"))
        assert await clients.holding(member, entities, timeout=5) == ["orders", "events/subscriptions/all"]
        async with bus.get_queue_receiver("orders", max_wait_time=2) as receiver:
            received = await receiver.receive_messages(max_message_count=2, max_wait_time=2)
            assert len(received) == 2
            # Received but not completed: a consumer still works on them, so not drained.
            assert "orders" in await clients.holding(member, entities, timeout=5)
            for message in received:
                await receiver.complete_message(message)
    assert await clients.holding(member, entities, timeout=5) == ["events/subscriptions/all"]
