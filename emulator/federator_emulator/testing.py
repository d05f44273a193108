"""Pytest fixtures for tests that need the emulator (enable with ``pytest_plugins``).

``emulator`` serves a small default namespace (see ``DEFAULT_TEST_CONFIG``) on an ephemeral
loopback port; ``emulator_factory(config)`` starts one with any config. Every emulator
started through them is stopped, and its thread joined, when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken

from federator_contract.emulatorconfig import EmulatorConfig
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


class FakeCredential:
    """A ``TokenCredential``: the emulator requires a bearer token but does not verify it."""

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
