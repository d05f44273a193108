"""Pytest plugin: Azurite's Blob service (npm `azurite`, installed by tools/install-azurite) for tests
that need Blob storage, e.g. the Event Hubs SDK's ``BlobCheckpointStore``.

* ``azurite_server`` (session) → :class:`~federator.local.azurite.RunningAzurite` on an ephemeral
  127.0.0.1 port, started through the same code local mode uses; stopped when the session ends.
* ``blob_container`` → the connection string and the name of a fresh, empty container for one test.

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

__all__ = ["BlobContainer", "azurite_server", "blob_container"]


@dataclass(frozen=True)
class BlobContainer:
    connection_string: str
    name: str


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAzurite]:
    try:
        blob_binary()
    except AzuriteNotFound:
        subprocess.run([str(ROOT / "tools" / "install-azurite")], check=True, timeout=600)
    server = start_azurite(Path(tmp_path_factory.mktemp("azurite")))
    yield server
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
