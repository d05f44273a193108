"""One namespace down, as a region outage looks to clients (its connections closed, new ones refused, its
management port too), while the others keep serving; then back, with what it held."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from azure.core.exceptions import ServiceRequestError
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventHubError
from azure.servicebus.management import ServiceBusAdministrationClient

from federator_emulator.outages import read_outages
from federator_emulator.server import RunningEmulator, start_emulator
from federator_emulator.testing import EmulatorFactory
from support.azure_clients import management_connection_string

pytestmark = pytest.mark.timeout(120)

CONFIG = {
    "namespaces": [
        {"name": "east", "queues": [{"name": "q"}], "eventHubs": [{"name": "orders", "partitionCount": 1}]},
        {"name": "west", "queues": [{"name": "q"}], "eventHubs": [{"name": "orders", "partitionCount": 1}]},
    ]
}


def producer(connection_string: str) -> EventHubProducerClient:
    # No retries: each send tells at once whether the namespace serves.
    return EventHubProducerClient.from_connection_string(
        connection_string, eventhub_name="orders", retry_total=0
    )


def sends(connection_string: str) -> bool:
    with producer(connection_string) as client:
        try:
            client.send_batch([EventData(b"x")])
        except EventHubError:
            return False
    return True


def admin(emulator: RunningEmulator, namespace: str) -> ServiceBusAdministrationClient:
    ns = emulator.namespace(namespace)
    return ServiceBusAdministrationClient.from_connection_string(
        management_connection_string(emulator, namespace),
        connection_verify=str(ns.ca_path),
        retry_total=0,
    )


def events_held(emulator: RunningEmulator, connection_string: str) -> int:
    with producer(connection_string) as client:
        partition = client.get_partition_properties("0")
    return int(partition["last_enqueued_sequence_number"]) + 1


def test_an_outage_refuses_one_namespace_while_the_others_serve(emulator_factory: EmulatorFactory) -> None:
    emulator = emulator_factory(CONFIG)
    east, west = emulator.connection_string("east"), emulator.connection_string("west")
    with producer(east) as kept, admin(emulator, "east") as east_admin, admin(emulator, "west") as west_admin:
        kept.send_batch([EventData(b"before")])
        emulator.set_outage("east", True)

        with pytest.raises(EventHubError):  # its open connection is closed, and a new one refused
            kept.send_batch([EventData(b"during")])
        assert refuses(emulator.namespace("east").amqp_port)
        with pytest.raises(ServiceRequestError):
            east_admin.get_queue("q")
        assert sends(west)
        assert west_admin.get_queue("q").name == "q"

        emulator.set_outage("east", False)
        assert east_admin.get_queue("q").name == "q"
    assert sends(east)  # on the same port as before
    assert events_held(emulator, east) == 2  # what it held before the outage, and the send after it


def taken(port: int) -> bool:
    """Whether another process could be given the port now, as the kernel hands out ephemeral ports (a
    namespace's are such): a plain bind, without SO_REUSEADDR."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_namespace_down_keeps_its_ports_so_it_comes_back_on_them(emulator_factory: EmulatorFactory) -> None:
    emulator = emulator_factory(CONFIG)
    east = emulator.namespace("east")
    emulator.set_outage("east", True)

    for port in (east.amqp_port, east.https_port):
        assert refuses(port), port  # as an outage looks to clients
        assert not taken(port), f"port {port} could be handed to another process during the outage"

    emulator.set_outage("east", False)
    assert sends(emulator.connection_string("east"))


def test_taking_down_a_namespace_the_config_lacks_names_the_ones_it_has(
    emulator_factory: EmulatorFactory,
) -> None:
    emulator = emulator_factory(CONFIG)
    with pytest.raises(KeyError, match=r"no namespace 'north' .*east, west"):
        emulator.set_outage("north", True)


def test_the_outages_file_lists_names_one_a_line(tmp_path: Path) -> None:
    outages = tmp_path / "outages"
    assert read_outages(outages) == set()
    outages.write_text("east  # the drill\n\n# west\nnorth\n")
    assert read_outages(outages) == {"east", "north"}


def test_an_emulator_process_takes_down_what_its_outages_file_names(tmp_path: Path) -> None:
    config, ready, outages = tmp_path / "emulator.yaml", tmp_path / "ready.json", tmp_path / "outages"
    config.write_text(yaml.safe_dump(CONFIG))
    command = [sys.executable, "-m", "federator_emulator", "--config", str(config), "--outages", str(outages)]
    process = subprocess.Popen([*command, "--ready-file", str(ready), "--log-level", "WARNING"])
    try:
        wait_for(ready.exists, "the emulator did not write its ready file")
        document = yaml.safe_load(ready.read_text())
        east, west = (document["namespaces"][n]["connectionString"] for n in ("east", "west"))
        east_port = document["namespaces"]["east"]["amqpPort"]
        assert sends(east)
        outages.write_text("east\n")
        wait_for(lambda: refuses(east_port), "east still serves after the outages file named it")
        assert sends(west)
        outages.unlink()
        wait_for(lambda: sends(east), "east does not serve again after leaving the outages file")
    finally:
        process.terminate()
        process.wait(15)


def refuses(port: int) -> bool:
    """A plain connect: the SDK leaks the socket of a connection refused (azure-eventhub 5.15)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def wait_for(check: object, what: str, timeout: float = 60.0) -> None:
    assert callable(check)
    waiter = threading.Event()
    for _ in range(int(timeout / 0.1)):
        if check():
            return
        waiter.wait(0.1)
    raise AssertionError(what)


def test_an_emulator_stops_cleanly_while_a_namespace_is_down(tmp_path: Path) -> None:
    emulator = start_emulator(CONFIG, tmp_path)
    emulator.set_outage("east", True)
    emulator.stop()  # raises if the reactor or the management plane does not stop
    with start_emulator(CONFIG, tmp_path) as again:  # its data dir (journals) was released too
        assert sends(again.connection_string("east"))
