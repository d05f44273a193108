"""A member that goes silent (its connections stay open and nothing answers, as in a network partition;
a stopped namespace refuses at once instead) holds no management read and no lag monitor for long: a read
fails with TimeoutError within its timeout, whether the member went silent under an open management link
or before the connection opened, its socket closed; and stopping a lag monitor whose measurement hangs
returns at once, the measurement ending within the monitor's read timeout (real SDK and emulator, through
a TCP proxy that can go silent)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventHubConsumerClient
from test_following_move import Silenceable
from test_lag import unclosed_sockets

from federator_emulator.testing import EmulatorFactory
from federator_spark import lag
from federator_spark.connections import Connection
from federator_spark.eventhubs_management import HubManagement
from federator_spark.lag import LagMonitor

CONFIG = {"namespaces": [{"name": "src", "eventHubs": [{"name": "orders", "partitionCount": 2}]}]}
TIMEOUT = 1.0
MARGIN = 3.0  # a loaded machine's scheduling


@pytest.fixture
def proxy(emulator_factory: EmulatorFactory) -> Iterator[Silenceable]:
    found = Silenceable(emulator_factory(CONFIG).connection_string("src"))
    try:
        yield found
    finally:
        found.close()


def consumer(proxy: Silenceable) -> Any:
    return EventHubConsumerClient.from_connection_string(
        proxy.connection_string, consumer_group="$Default", eventhub_name="orders"
    )


def ended_within(seconds: float, action: Callable[[], Any]) -> BaseException | None:
    """Runs ``action`` on a thread of its own; what it raised, once it ended within ``seconds`` (the test
    fails if it did not: it would hold its thread for as long as the member stays silent)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting for the silent member after {seconds:g}s"
    return raised[0] if raised else None


def test_a_read_under_an_open_link_fails_within_its_timeout(proxy: Silenceable) -> None:
    client = consumer(proxy)
    management = HubManagement(client, sdk_retry=False, timeout=TIMEOUT)
    try:
        assert management.partition_properties("0")["is_empty"] is True  # the link is open
        proxy.silent.set()
        error = ended_within(TIMEOUT + MARGIN, lambda: management.partition_properties("1"))
        assert isinstance(error, TimeoutError), error
        assert "within 1s" in str(error)
    finally:
        management.close()
        client.close()
    assert unclosed_sockets() == []


def test_a_read_whose_connection_is_never_answered_fails_within_its_timeout(proxy: Silenceable) -> None:
    proxy.silent.set()  # accepted, never answered: the AMQP handshake waits
    client = consumer(proxy)
    management = HubManagement(client, timeout=TIMEOUT)  # not asked again through the SDK: it would wait
    try:
        error = ended_within(TIMEOUT + MARGIN, management.partition_ids)
        assert isinstance(error, TimeoutError), error
    finally:
        management.close()
        client.close()
    assert unclosed_sockets() == []


def test_stopping_a_monitor_whose_measurement_hangs_returns_at_once(
    proxy: Silenceable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lag, "POLL_SECONDS", 0.2)  # the next measurement soon after the first
    source = Connection(connection_string=proxy.connection_string)
    monitor = LagMonitor(source, "orders", "$Default", tmp_path / "checkpoint", tmp_path / "status.json")
    monitor.start()
    try:
        deadline = time.monotonic() + 60
        while not monitor.path.exists():  # measured once: the link is open
            assert time.monotonic() < deadline, "the monitor never measured"
            time.sleep(0.05)
        proxy.silent.set()
        time.sleep(0.5)  # its next measurement is under way and waits for an answer
        started = time.monotonic()
    finally:
        monitor.stop()
    assert time.monotonic() - started < lag.STOP_WAIT_SECONDS + 1.0
    monitor._thread.join(lag.READ_TIMEOUT_SECONDS + MARGIN)
    assert not monitor._thread.is_alive(), "the measurement still waits for the silent member"
    assert unclosed_sockets() == []
