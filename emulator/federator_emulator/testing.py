"""Pytest fixtures for tests that need the emulator (enable with ``pytest_plugins``).

``emulator`` serves a small default namespace (see ``DEFAULT_TEST_CONFIG``) on an ephemeral
loopback port; ``emulator_factory(config)`` starts one with any config. Every emulator
started through them is stopped, and its thread joined, when the test ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken

from federator_contract.emulatorconfig import EmulatorConfig
from federator_emulator.identity.directory import ADMIN_CLIENT_ID
from federator_emulator.server import RunningEmulator, start_emulator

DEFAULT_TEST_CONFIG: dict[str, Any] = {
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "hub1", "partitionCount": 2, "consumerGroups": ["cg1"]}],
            "queues": [{"name": "q1"}],
            "topics": [{"name": "t1", "subscriptions": [{"name": "all"}]}],
        }
    ]
}

EmulatorFactory = Callable[..., RunningEmulator]


@pytest.fixture
def emulator_factory() -> Iterator[EmulatorFactory]:
    """``start(config: dict | EmulatorConfig, data_dir: Path | None = None) -> RunningEmulator``."""
    running: list[RunningEmulator] = []

    def start(config: dict[str, Any] | EmulatorConfig, data_dir: Path | None = None) -> RunningEmulator:
        emulator = start_emulator(config, data_dir)
        running.append(emulator)
        return emulator

    yield start
    for emulator in running:
        emulator.stop()


@pytest.fixture
def emulator(emulator_factory: EmulatorFactory) -> RunningEmulator:
    """An emulator serving ``DEFAULT_TEST_CONFIG``: hub1 (2 partitions, cg1), q1, t1/all."""
    return emulator_factory(DEFAULT_TEST_CONFIG)


@pytest.fixture
def emulator_connection_string(emulator: RunningEmulator) -> str:
    return emulator.connection_string()


class EmulatorCredential:
    """A ``TokenCredential`` whose tokens the emulator's tenant signs for one application (by default the
    built-in administrator, Owner of every namespace and zone), made in process: what tests of other
    things use where a ``ClientSecretCredential`` against the token endpoint would only be slower."""

    def __init__(self, emulator: RunningEmulator, client_id: str = ADMIN_CLIENT_ID) -> None:
        application = emulator.emulator.tenant.directory.application(client_id)
        if application is None:
            raise ValueError(f"no application {client_id!r} in the emulator's tenant")
        self._tokens = emulator.emulator.tenant.tokens
        self._application = application

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        issued = self._tokens.access_token(self._application, scopes[0].removesuffix("/.default"))
        return AccessToken(issued.token, int(time.time()) + issued.expires_in)


class AsyncEmulatorCredential(EmulatorCredential):
    """The ``AsyncTokenCredential`` twin of ``EmulatorCredential``."""

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:  # type: ignore[override]
        return super().get_token(*scopes, **kwargs)

    async def close(self) -> None:
        pass

    async def __aenter__(self) -> AsyncEmulatorCredential:
        return self

    async def __aexit__(self, *args: Any) -> None:
        pass


class FakeCredential:
    """A ``TokenCredential`` handing out a fixed token that the emulator did not issue (it is refused)."""

    def __init__(self, token: str = "emulator-token") -> None:
        self.token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(self.token, 2**31 - 1)


class AsyncFakeCredential:
    """The ``AsyncTokenCredential`` twin of ``FakeCredential``."""

    def __init__(self, token: str = "emulator-token") -> None:
        self.token = token

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(self.token, 2**31 - 1)

    async def close(self) -> None:
        pass

    async def __aenter__(self) -> AsyncFakeCredential:
        return self

    async def __aexit__(self, *args: Any) -> None:
        pass
