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
def driver(emulator_connection_string: str, tmp_path: Path) -> Iterator[SourceDriver]:
    options = {
        "connection": Connection(connection_string=emulator_connection_string).to_option(),
        "queueName": "q1",
        "maxMessagesPerBatch": "10",
        "receiveWaitSeconds": "0.5",
        "checkpointLocation": str(tmp_path / "checkpoint"),
    }
    driver = SourceDriver(SourceSettings.from_options(options))
    yield driver
    driver._stop_receiving_ahead()
    driver._reset_receiver()
