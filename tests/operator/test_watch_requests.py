"""Watch requests as the operator makes them (kube/client.py): kubernetes_asyncio's `Watch` over the client's
own `ApiClient`, so a watch request neither builds an `ApiClient` (and loads the CA store) of its own nor
closes the client's when it ends. Against the faithful fake API server."""

from __future__ import annotations

import contextlib
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import api_client
from kubernetes_asyncio.watch import Watch

from federator.kube import client as kube_client
from federator.kube.client import KubeClient
from federator.kube.resources import CONFIGMAPS
from support.kube import KubeServer

pytestmark = pytest.mark.asyncio

NS = "default"
REQUESTS = 5


def api_clients_built(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every `ApiClient` built from here on (each loads the CA store into an SSL context)."""
    built: list[object] = []
    real = api_client.ApiClient.__init__

    def counted(self: api_client.ApiClient, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(api_client.ApiClient, "__init__", counted)
    return built


async def first_event(client: KubeClient) -> dict[str, Any]:
    """One watch request, left after its first event (the stored object)."""
    events = client.watch(
        CONFIGMAPS.path(NS), label_selector="watched=yes", resource_version="", timeout_seconds=5
    )
    async with contextlib.aclosing(events):
        async for event in events:
            return event
    raise AssertionError("the watch ended without an event")


async def test_watch_requests_build_no_api_client_of_their_own(
    kube: KubeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    built = api_clients_built(monkeypatch)  # from here on: the client has its own
    try:
        body = {"metadata": {"name": "seen", "labels": {"watched": "yes"}}, "data": {"k": "v"}}
        await client.create(CONFIGMAPS.path(NS), body)

        for _ in range(REQUESTS):
            event = await first_event(client)
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "seen")

        assert built == []
        # The watches left the client's own ApiClient open: requests still go through it.
        assert (await client.get(CONFIGMAPS.path(NS, "seen")) or {}).get("data") == {"k": "v"}
    finally:
        await client.close()


async def test_the_operators_watch_sets_what_kubernetes_asyncios_own_sets() -> None:
    """The borrowed-client `Watch` skips `Watch.__init__`: a kubernetes_asyncio that sets more there fails
    here instead of in a watch."""
    theirs = Watch()
    try:
        assert vars(kube_client._Watch(theirs._api_client)).keys() == vars(theirs).keys()
    finally:
        await theirs.close()
