"""Whether the cluster serves a resource (a Spark operator's), as the operator's passes ask it: one discovery
request answers every pass that asks while it is out, and a served answer is kept for a while. Counted at the
faithful fake API server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from federator.kube.client import KubeClient
from support.kube import KubeServer

pytestmark = pytest.mark.asyncio

SPARK = ("sparkoperator.k8s.io/v1beta2", "sparkapplications")
NOT_INSTALLED = ("widgets.example.com/v1", "widgets")
PASSES = 50
"""Daemons whose passes ask at the same moment (a fleet's observe passes fall together)."""


@pytest_asyncio.fixture
async def client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield found
    await found.close()


async def burst(client: KubeClient, api_version: str, plural: str) -> list[bool]:
    return await asyncio.gather(*(client.serves(api_version, plural) for _ in range(PASSES)))


def discovery_requests(kube: KubeServer, api_version: str) -> int:
    return kube.emulator.times("GET", f"/apis/{api_version}")


async def test_passes_asking_together_share_one_discovery_request(
    client: KubeClient, kube: KubeServer
) -> None:
    assert await burst(client, *SPARK) == [True] * PASSES
    assert discovery_requests(kube, SPARK[0]) == 1

    assert await burst(client, *SPARK) == [True] * PASSES  # kept: not asked again
    assert discovery_requests(kube, SPARK[0]) == 1


async def test_an_expired_answer_is_asked_for_once_however_many_passes_ask(
    client: KubeClient, kube: KubeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(KubeClient, "DISCOVERY_TTL_SECONDS", 0.0)  # every answer expires when it arrives
    expiring = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    try:
        for expiry in (1, 2, 3):
            assert await burst(expiring, *SPARK) == [True] * PASSES
            assert discovery_requests(kube, SPARK[0]) == expiry
    finally:
        await expiring.close()


async def test_not_served_is_shared_while_asked_but_never_kept(client: KubeClient, kube: KubeServer) -> None:
    assert await burst(client, *NOT_INSTALLED) == [False] * PASSES
    assert discovery_requests(kube, NOT_INSTALLED[0]) == 1

    # Installing the resource's operator must be noticed at the next pass.
    assert await burst(client, *NOT_INSTALLED) == [False] * PASSES
    assert discovery_requests(kube, NOT_INSTALLED[0]) == 2
