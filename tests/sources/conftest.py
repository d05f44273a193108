"""Fixtures of the Service Bus source's driver-side tests: a driver on queue ``q1`` of the emulator, without
Spark (each ``latest`` call is what Spark's ``latestOffset`` would make)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from federator_spark.connections import Connection
from federator_spark.sources.servicebus_driver import SourceDriver
from federator_spark.sources.servicebus_settings import SourceSettings


@pytest.fixture
def send(emulator_connection_string: str) -> Callable[[range], None]:
    def send(numbers: range) -> None:
        client = ServiceBusClient.from_connection_string(emulator_connection_string)
        with client, client.get_queue_sender("q1") as sender:
            sender.send_messages([ServiceBusMessage(str(n)) for n in numbers])

    return send


@pytest.fixture
def driver_on(tmp_path: Path) -> Iterator[Callable[..., SourceDriver]]:
    """Drivers on queue ``q1`` of the namespace a connection string names (more data source options as
    keywords), each with a checkpoint of its own; stopped after the test."""
    made: list[SourceDriver] = []

    def driver_on(connection_string: str, **options: str) -> SourceDriver:
        settings = {
            "connection": Connection(connection_string=connection_string).to_option(),
            "queueName": "q1",
            "maxMessagesPerBatch": "10",
            "receiveWaitSeconds": "0.5",
            "checkpointLocation": str(tmp_path / ("checkpoint" + (f"-{len(made)}" if made else ""))),
            **options,
        }
        made.append(SourceDriver(SourceSettings.from_options(settings)))
        return made[-1]

    yield driver_on
    for driver in made:
        driver._stop_receiving_ahead()
        driver._reset_receiver()


@pytest.fixture
def driver(driver_on: Callable[..., SourceDriver], emulator_connection_string: str) -> SourceDriver:
    return driver_on(emulator_connection_string)
