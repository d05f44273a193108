"""Three emulator namespaces with the same topic, reachable over ARM (HTTPS, trustme CA) and ATOM, and a
ManagementEnvironment pointing at them, with a recording credential factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
import pytest_asyncio
from provision_helpers import NAMESPACES, RecordingFactory, emulator_config, management_connection_string

from federator.kube.client import KubeClient
from federator.provision.environment import ManagementEnvironment
from federator_emulator.server import RunningEmulator, start_emulator
from support.kube import KubeServer


@pytest.fixture
def sb() -> Iterator[RunningEmulator]:
    with start_emulator(emulator_config()) as emulator:
        yield emulator


@pytest.fixture
def credentials(sb: RunningEmulator) -> RecordingFactory:
    return RecordingFactory(sb)


@pytest.fixture
def env(sb: RunningEmulator, credentials: RecordingFactory) -> ManagementEnvironment:
    return ManagementEnvironment(
        arm_endpoint=sb.arm_endpoint,
        connection_verify=str(sb.ca_path),
        credential_factory=credentials,
        emulator_management={ns: management_connection_string(sb, ns) for ns in NAMESPACES},
    )


@pytest_asyncio.fixture
async def kube_client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    client = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield client
    await client.close()
