"""Pytest plugin: Azurite's Blob service (npm `azurite`, installed by tools/install-azurite) for tests
that need Blob storage, e.g. the Event Hubs SDK's ``BlobCheckpointStore``.

* ``azurite_server`` (session) → :class:`~federator.local.azurite.RunningAzurite` on an ephemeral
  127.0.0.1 port, started through the same code local mode uses; stopped when the session ends.
* ``blob_container`` → the connection string and the name of a fresh, empty container for one test.
* ``https_azurite`` → an Azurite of one test's own over HTTPS (a certificate for 127.0.0.1 from a CA of
  its own), which also accepts Microsoft Entra bearer tokens; and the CA file to trust.

A missing Azurite is installed once (tools/install-azurite): CI must never pass by skipping.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from federator.local.azurite import AzuriteNotFound, RunningAzurite, blob_binary, start_azurite

from .resources import ROOT

__all__ = ["BlobContainer", "azurite_server", "blob_container", "https_azurite"]


@dataclass(frozen=True)
class BlobContainer:
    connection_string: str
    name: str


def ensure_azurite() -> None:
    try:
        blob_binary()
    except AzuriteNotFound:
        subprocess.run([str(ROOT / "tools" / "install-azurite")], check=True, timeout=600)


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAzurite]:
    ensure_azurite()
    server = start_azurite(Path(tmp_path_factory.mktemp("azurite")))
    yield server
    server.stop()


@pytest.fixture
def https_azurite(tmp_path: Path) -> Iterator[tuple[RunningAzurite, Path]]:
    import trustme

    ensure_azurite()
    ca = trustme.CA()
    certificate = ca.issue_cert("127.0.0.1")
    cert, key, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    certificate.cert_chain_pems[0].write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    server = start_azurite(tmp_path / "azurite", https=(cert, key))
    yield server, ca_file
    server.stop()


@pytest.fixture
def blob_container(azurite_server: RunningAzurite) -> Iterator[BlobContainer]:
    from azure.storage.blob import ContainerClient

    name = f"test-{uuid.uuid4().hex[:12]}"
    connection = azurite_server.connection_string()
    with ContainerClient.from_connection_string(connection, name) as container:
        container.create_container()
        yield BlobContainer(connection, name)
        container.delete_container()
