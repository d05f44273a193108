"""Helpers that drive the real SDK clients against the emulator."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient
from azure.eventhub.aio import EventHubConsumerClient as AsyncEventHubConsumerClient

RECEIVE_TIMEOUT = 15.0


def receive_events(
    connection_string: str,
    count: int,
    *,
    eventhub_name: str = "hub1",
    consumer_group: str = "$Default",
    partition_id: str = "0",
    on_ready: Callable[[], None] | None = None,
    **receive_kwargs: Any,
) -> list[EventData]:
    """Receive until ``count`` events arrived (sync client); ``on_ready`` runs once the link is up."""
    client = EventHubConsumerClient.from_connection_string(
        connection_string, consumer_group=consumer_group, eventhub_name=eventhub_name
    )
    events: list[EventData] = []
    done = threading.Event()
    ready = threading.Event()

    def on_event(context: Any, event: EventData | None) -> None:
        if event is not None:
            events.append(event)
        if len(events) >= count:
            done.set()

    def on_partition_initialize(context: Any) -> None:
        ready.set()

    thread = threading.Thread(
        target=client.receive,
        kwargs={
            "on_event": on_event,
            "partition_id": partition_id,
            "max_wait_time": 0.5,
            "on_partition_initialize": on_partition_initialize,
            **receive_kwargs,
        },
    )
    thread.start()
    try:
        if on_ready is not None:
            assert ready.wait(RECEIVE_TIMEOUT), "consumer did not start"
            on_ready()
        done.wait(RECEIVE_TIMEOUT)
    finally:
        client.close()
        thread.join(RECEIVE_TIMEOUT)
    assert len(events) >= count, f"received {len(events)} of {count} events"
    return events


async def receive_events_async(
    connection_string: str,
    count: int,
    *,
    eventhub_name: str = "hub1",
    consumer_group: str = "$Default",
    partition_id: str | None = "0",
    on_ready: Callable[[], None] | None = None,
    **receive_kwargs: Any,
) -> list[EventData]:
    """Receive until ``count`` events arrived (async client).

    ``partition_id=None`` reads every partition; ``on_ready`` runs once the link is up.
    """
    client = AsyncEventHubConsumerClient.from_connection_string(
        connection_string, consumer_group=consumer_group, eventhub_name=eventhub_name
    )
    events: list[EventData] = []
    done = asyncio.Event()

    async def on_event(context: Any, event: EventData | None) -> None:
        if event is not None:
            events.append(event)
        if len(events) >= count:
            done.set()

    ready_work: list[asyncio.Task[None]] = []

    async def on_partition_initialize(context: Any) -> None:
        if on_ready is not None:
            # The SDK attaches the link only after this callback returns: run it alongside.
            ready_work.append(asyncio.create_task(asyncio.to_thread(on_ready)))

    async with client:
        task = asyncio.create_task(
            client.receive(
                on_event,
                partition_id=partition_id,
                max_wait_time=0.5,
                on_partition_initialize=on_partition_initialize,
                **receive_kwargs,
            )
        )
        try:
            await asyncio.wait_for(done.wait(), RECEIVE_TIMEOUT)
            for work in ready_work:
                await work  # surfaces its assertion errors
        finally:
            await client.close()
            task.cancel()  # receive() does not return on close by itself
            await asyncio.wait([task], timeout=RECEIVE_TIMEOUT)
    assert len(events) >= count, f"received {len(events)} of {count} events"
    return events


@pytest.fixture
def cs(emulator: Any) -> str:
    """Connection string of the default test namespace."""
    return str(emulator.connection_string())


@pytest.fixture
def eh_receive() -> Callable[..., list[EventData]]:
    """``eh_receive(connection_string, count, partition_id=..., starting_position=..., ...)``."""
    return receive_events


@pytest.fixture
def eh_receive_async() -> Callable[..., Any]:
    return receive_events_async


MGMT_TEST_CONFIG: dict[str, Any] = {
    "namespaces": [
        {
            "name": "ns1",
            "queues": [{"name": "q1"}],
            "topics": [{"name": "t1", "subscriptions": [{"name": "all"}, {"name": "repl"}]}],
        }
    ],
    "dnsZones": [{"name": "federator.test"}],
}


@pytest.fixture(scope="module")
def mgmt_emulator() -> Any:
    """One emulator per test module for management-plane tests (``MGMT_TEST_CONFIG``)."""
    from federator_emulator.server import start_emulator

    with start_emulator(MGMT_TEST_CONFIG) as emulator:
        yield emulator
