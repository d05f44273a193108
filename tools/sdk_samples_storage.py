"""Blob Storage for the checkpoint samples of ``tools/run-sdk-samples`` (``sdk_samples.py``): Azurite at
Azure's account URL, the containers the samples name, and events for them to read and checkpoint."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import sdk_samples_js

from federator.local.azurite import ACCOUNT, AzuriteNotFound, RunningAzurite, blob_binary, start_azurite

if TYPE_CHECKING:
    from azure.storage.blob import ContainerClient

ROOT = Path(__file__).resolve().parents[1]
LIVE_EVENT_SECONDS = 3.0  # between the batches sent while a checkpoint sample runs

# The checkpoint samples' storage account: Azurite at Azure's account URL (AZURE_STORAGE_ACCOUNT with the
# samples' default PROTOCOL and ACCOUNT_URL_SUFFIX), on a loopback address of its own beside the emulator.
NEEDS_BLOB_STORAGE = "CheckpointStore"
BLOB_HOST, BLOB_ADDRESS = f"{ACCOUNT}.blob.core.windows.net", "127.0.0.2"
BLOB_CONTAINER = "your-blob-container-name"  # written in the samples ("make sure the container exists")
BLOB_CONTAINERS = (BLOB_CONTAINER, sdk_samples_js.BLOB_CONTAINER)


def install_azurite() -> None:
    """Install Azurite if it is missing (the namespace has no network); without npm the checkpoint samples
    are reported as not run, with the reason."""
    try:
        blob_binary()
    except AzuriteNotFound:
        subprocess.run([str(ROOT / "tools" / "install-azurite")], check=False)


def needs_blob_storage(paths: list[Path]) -> bool:
    return any(NEEDS_BLOB_STORAGE in path.read_text() for path in paths)


@dataclass
class BlobStorage:
    """Azurite serving the samples' storage account, and the CA of its certificate."""

    azurite: RunningAzurite
    ca: Path

    def container(self, name: str) -> ContainerClient:
        from azure.storage.blob import ContainerClient

        connection, verify = self.azurite.connection_string(), str(self.ca)
        return ContainerClient.from_connection_string(connection, name, connection_verify=verify)

    def checkpoints(self, event_hub: str) -> int:
        """How many partitions of ``event_hub`` have a checkpoint in the samples' containers (consumer
        group $Default)."""
        prefix = f"localhost/{event_hub}/$default/checkpoint/"
        found = 0
        for name in BLOB_CONTAINERS:
            with self.container(name) as container:
                found += len(list(container.list_blobs(name_starts_with=prefix)))
        return found


def start_blob_storage(work: Path) -> BlobStorage:
    """Azurite on port 443 of ``BLOB_ADDRESS`` with a throwaway data dir, and the samples' container."""
    import trustme

    ca, tls = trustme.CA(), work / "azurite-tls"
    tls.mkdir(exist_ok=True)
    certificate = ca.issue_cert(BLOB_HOST, BLOB_ADDRESS)
    cert, key, ca_file = tls / "cert.pem", tls / "key.pem", tls / "ca.pem"
    certificate.cert_chain_pems[0].write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    shutil.rmtree(work / "azurite", ignore_errors=True)
    azurite = start_azurite(work / "azurite", host=BLOB_ADDRESS, port=443, https=(cert, key))
    storage = BlobStorage(azurite, ca_file)
    for name in BLOB_CONTAINERS:
        with storage.container(name) as container:
            container.create_container()
    return storage


def stop_blob_storage(storage: BlobStorage) -> None:
    storage.azurite.stop()
    shutil.rmtree(storage.azurite.location, ignore_errors=True)


def seed_events(connection: str, event_hub: str, partitions: int, count: int = 25) -> None:
    """Events for a checkpoint sample to read and checkpoint (its hub is otherwise empty): by default as
    many on each partition as ``recv_with_checkpoint_by_event_count`` reads before it checkpoints."""
    from azure.eventhub import EventData, EventHubProducerClient

    with EventHubProducerClient.from_connection_string(connection, eventhub_name=event_hub) as producer:
        for partition in range(partitions):
            producer.send_batch([EventData(f"event {i}") for i in range(count)], partition_id=str(partition))


@contextmanager
def live_events(connection: str, event_hub: str, partitions: int) -> Iterator[None]:
    """Events sent while a checkpoint sample runs, for those that start at the latest event (the JS
    samples' consumer client does, without a checkpoint): a batch on each partition every few seconds."""
    stop = threading.Event()

    def send() -> None:
        while not stop.wait(LIVE_EVENT_SECONDS):
            seed_events(connection, event_hub, partitions, count=5)

    sender = threading.Thread(target=send, name=f"live-events-{event_hub}", daemon=True)
    sender.start()
    try:
        yield
    finally:
        stop.set()
        sender.join()
