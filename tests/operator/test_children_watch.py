"""The children as watched: a copy of the operator's labelled children that follows the API server by a
watch (kubernetes_asyncio's `Watch`), so that passes read their children without asking it. Against the
faithful fake API server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from federator.kube import children as watching
from federator.kube.children import Children, DirectChildren, Watched
from federator.kube.client import KubeClient
from federator.kube.resources import CONFIGMAPS, ResourceRef
from support.kube import KubeServer

pytestmark = pytest.mark.asyncio

NS = "default"
LABEL = "app.kubernetes.io/managed-by=federator"


@pytest_asyncio.fixture
async def client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield found
    await found.close()


def config_map(name: str, labelled: bool = True, **data: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "federator"} if labelled else {}
    return {"metadata": {"name": name, "namespace": NS, "labels": labels}, "data": data}


async def until(
    check: Callable[[], bool], seconds: float = 5, message: str = "the watched copy did not catch up"
) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, message
        await asyncio.sleep(0.02)


async def test_it_lists_the_labelled_objects_then_follows_their_changes(client: KubeClient) -> None:
    await client.create(CONFIGMAPS.path(NS), config_map("ours", value="1"))
    await client.create(CONFIGMAPS.path(NS), config_map("theirs", labelled=False))
    watched = Watched(client, CONFIGMAPS, NS, LABEL)
    await watched.start()
    try:
        assert watched.get("ours") is not None and watched.get("theirs") is None

        await client.create(CONFIGMAPS.path(NS), config_map("new"))
        await client.patch(CONFIGMAPS.path(NS, "ours"), {"data": {"value": "2"}})
        await until(lambda: watched.get("new") is not None)
        await until(lambda: (watched.get("ours") or {}).get("data") == {"value": "2"})

        await client.delete(CONFIGMAPS.path(NS, "new"))
        await until(lambda: watched.get("new") is None)
    finally:
        await watched.stop()


async def test_a_watch_the_server_ends_is_resumed_without_missing_a_change(
    client: KubeClient, kube: KubeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watching, "WATCH_SECONDS", 1)
    path = CONFIGMAPS.path(NS)
    watched = Watched(client, CONFIGMAPS, NS, LABEL)
    await watched.start()
    try:
        seen = await client.create(path, config_map("during-the-first-watch"))
        await until(lambda: watched.get("during-the-first-watch") is not None)
        renewals = len(kube.emulator.watches(path))
        await until(lambda: len(kube.emulator.watches(path)) > renewals, message="the watch was not renewed")
        resumed_from = kube.emulator.watches(path)[-1]
        assert resumed_from.isdigit() and int(resumed_from) >= int(seen["metadata"]["resourceVersion"]), (
            "a renewed watch resumes from the last version seen"
        )
        assert kube.emulator.times("GET", path) == 1, "renewing a watch lists nothing again"

        await client.create(path, config_map("after-renewal"))
        await until(lambda: watched.get("after-renewal") is not None)
    finally:
        await watched.stop()


async def test_what_the_operator_wrote_is_seen_at_once_and_not_undone_by_older_events(
    client: KubeClient,
) -> None:
    watched = Watched(client, CONFIGMAPS, NS, LABEL)
    await watched.start()
    try:
        created = await client.create(CONFIGMAPS.path(NS), config_map("mine", value="1"))
        patched = await client.patch(CONFIGMAPS.path(NS, "mine"), {"data": {"value": "2"}})
        watched.remember(patched)
        assert (watched.get("mine") or {}).get("data") == {"value": "2"}
        watched.remember(created)  # what the watch delivers late is older than what was written
        assert (watched.get("mine") or {}).get("data") == {"value": "2"}
    finally:
        await watched.stop()


async def test_children_come_from_one_watch_per_resource_and_namespace(client: KubeClient) -> None:
    children = Children(client, LABEL)
    try:
        first, second = await asyncio.gather(
            children.get(CONFIGMAPS, NS, "later"), children.get(CONFIGMAPS, NS, "later")
        )
        assert first is None and second is None
        await client.create(CONFIGMAPS.path(NS), config_map("later"))
        deadline = asyncio.get_running_loop().time() + 5
        while await children.get(CONFIGMAPS, NS, "later") is None:  # seen through the watch
            assert asyncio.get_running_loop().time() < deadline, "the watched copy did not catch up"
            await asyncio.sleep(0.02)
        assert len(children) == 1
    finally:
        await children.close()


async def test_a_resource_the_server_does_not_serve_is_read_directly(client: KubeClient) -> None:
    children = Children(client, LABEL)
    try:
        missing = ResourceRef("example.com/v1", "widgets")
        assert await children.get(missing, NS, "any") is None  # the LIST failed: read by name instead
    finally:
        await children.close()


async def test_children_with_a_label_are_read_from_the_copy_without_asking_again(
    client: KubeClient, kube: KubeServer
) -> None:
    app = "federator.io/application"
    await client.create(CONFIGMAPS.path(NS), config_map("no-application"))
    for name, application in (("member", "orders"), ("other", "billing")):
        body = config_map(name)
        body["metadata"]["labels"][app] = application
        await client.create(CONFIGMAPS.path(NS), body)
    children = Children(client, LABEL)
    try:
        found = await children.labelled(CONFIGMAPS, NS, app, "orders")
        assert [o["metadata"]["name"] for o in found] == ["member"]
        lists = kube.emulator.times("GET", CONFIGMAPS.path(NS))

        joined = config_map("joined")
        joined["metadata"]["labels"][app] = "orders"
        await client.create(CONFIGMAPS.path(NS), joined)
        deadline = asyncio.get_running_loop().time() + 5
        while len(await children.labelled(CONFIGMAPS, NS, app, "orders")) < 2:  # seen through the watch
            assert asyncio.get_running_loop().time() < deadline, "the watched copy did not catch up"
            await asyncio.sleep(0.02)
        assert kube.emulator.times("GET", CONFIGMAPS.path(NS)) == lists  # no second LIST
    finally:
        await children.close()


async def test_children_with_a_label_are_listed_where_nothing_is_watched(client: KubeClient) -> None:
    body = config_map("member")
    body["metadata"]["labels"]["federator.io/application"] = "orders"
    await client.create(CONFIGMAPS.path(NS), body)
    direct = DirectChildren(client)
    found = await direct.labelled(CONFIGMAPS, NS, "federator.io/application", "orders")
    assert [o["metadata"]["name"] for o in found] == ["member"]
    assert await direct.labelled(CONFIGMAPS, NS, "federator.io/application", "billing") == []
