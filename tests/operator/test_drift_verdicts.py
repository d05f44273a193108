"""Drift verdicts are remembered per child version and plan: a pass over children that did not change
walks none of their managedFields again; a new resourceVersion, another plan or another judge is judged
afresh; a deleted child is forgotten, and the verdicts stay bounded. Children applied to the faithful fake
API server, judged by the operator's own `drifted`."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from federator.apply.children import drifted, ensure
from federator.kube.children import Watched
from federator.kube.client import MERGE_PATCH, KubeClient
from federator.kube.resources import CONFIGMAPS
from federator.kube.verdicts import VERDICTS, Verdicts
from support.kube import KubeServer

pytestmark = pytest.mark.asyncio

NS = "default"
LABEL = "app.kubernetes.io/managed-by=federator"
Obj = dict[str, Any]


class Walks:
    """`drifted`, counting the children it walked."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, desired: Obj, stored: Obj) -> bool:
        self.count += 1
        return drifted(desired, stored)


@pytest_asyncio.fixture
async def client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"User-Agent": "federator-operator/0.1"}))
    yield found
    await found.close()


@pytest_asyncio.fixture
async def someone(kube: KubeServer) -> AsyncIterator[KubeClient]:
    """Another client, whose writes are recorded under another manager's name."""
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"User-Agent": "kubectl-edit/v1.31"}))
    yield found
    await found.close()


def planned(name: str, **data: str) -> Obj:
    labels = {"app.kubernetes.io/managed-by": "federator"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "data": data,
    }


async def applied(client: KubeClient, *names: str) -> list[tuple[Obj, Obj]]:
    """(desired, stored) of each child, as a pass finds them after creating them."""
    found = []
    for name in names:
        desired = planned(name, task="1")
        _, stored = await ensure(client, CONFIGMAPS, desired, None)
        found.append((desired, stored))
    return found


def a_pass(verdicts: Verdicts, walks: Walks, children: list[tuple[Obj, Obj]]) -> list[bool]:
    return [verdicts.judged(walks, desired, stored) for desired, stored in children]


async def test_a_second_pass_over_unchanged_children_walks_none_of_them(client: KubeClient) -> None:
    children = await applied(client, "a", "b", "c")
    verdicts, walks = Verdicts(), Walks()

    assert a_pass(verdicts, walks, children) == [False, False, False]
    assert walks.count == 3
    assert a_pass(verdicts, walks, children) == [False, False, False]
    assert walks.count == 3, "nothing changed: no child walked again"

    replanned = [(copy.deepcopy(desired), stored) for desired, stored in children]
    assert a_pass(verdicts, walks, replanned) == [False, False, False]
    assert walks.count == 3, "an equal plan rendered again is the same plan"


async def test_a_child_as_federators_own_apply_returned_it_is_not_walked(
    client: KubeClient, someone: KubeClient
) -> None:
    """Server-side apply is idempotent: the plan applied again to what its apply returned changes nothing,
    so the first pass after a write (a fleet's first observe passes) walks no child."""
    desired, walks = planned("a", task="1"), Walks()
    _, created = await ensure(client, CONFIGMAPS, desired, None)
    assert VERDICTS.judged(walks, desired, created) is False
    assert walks.count == 0
    assert drifted(desired, created) is False, "what is taken as applied is what a walk finds"

    edited = await someone.patch(CONFIGMAPS.path(NS, "a"), {"data": {"task": None}}, MERGE_PATCH)
    assert VERDICTS.judged(walks, desired, edited) is True
    assert walks.count == 1, "another manager's version is walked"
    _, restored = await ensure(client, CONFIGMAPS, desired, edited)
    assert VERDICTS.judged(walks, desired, restored) is False
    assert walks.count == 1, "what Federator's apply restored is not walked either"
    assert VERDICTS.judged(walks, planned("a", task="3"), restored) is True
    assert walks.count == 2, "another plan is walked"


async def test_a_child_with_a_new_resource_version_is_walked_again(client: KubeClient) -> None:
    [(desired, stored)] = await applied(client, "a")
    verdicts, walks = Verdicts(), Walks()
    assert verdicts.judged(walks, desired, stored) is False

    path = CONFIGMAPS.path(NS, "a")
    annotated = await client.patch(path, {"metadata": {"annotations": {"note": "a user's"}}}, MERGE_PATCH)
    assert verdicts.judged(walks, desired, annotated) is False, "what another manager added is not drift"
    edited = await client.patch(path, {"data": {"task": "2"}}, MERGE_PATCH)
    assert verdicts.judged(walks, desired, edited) is True, "a value Federator sets was changed"
    assert walks.count == 3, "each new version walked once"

    assert verdicts.judged(walks, desired, stored) is False, "an older version is judged again, not mixed up"


async def test_another_plan_or_another_judge_is_judged_afresh(client: KubeClient) -> None:
    [(desired, stored)] = await applied(client, "a")
    verdicts, walks = Verdicts(), Walks()
    assert verdicts.judged(walks, desired, stored) is False

    assert verdicts.judged(walks, planned("a", task="2"), stored) is True
    other = Walks()
    assert verdicts.judged(other, desired, stored) is False
    assert (walks.count, other.count) == (2, 1)


async def test_an_object_no_api_server_stored_is_judged_every_time() -> None:
    desired = planned("a", task="1")
    by_hand = copy.deepcopy(desired)  # neither uid nor resourceVersion
    verdicts, walks = Verdicts(), Walks()
    a_pass(verdicts, walks, [(desired, by_hand)] * 2)
    assert walks.count == 2 and len(verdicts) == 0


async def test_verdicts_are_bounded_the_least_recently_judged_going_first(client: KubeClient) -> None:
    children = await applied(client, "a", "b", "c")
    verdicts, walks = Verdicts(capacity=2), Walks()
    a_pass(verdicts, walks, children)
    assert len(verdicts) == 2 and children[0][1]["metadata"]["uid"] not in verdicts

    a_pass(verdicts, walks, children[1:])
    assert walks.count == 3, "the two remembered were not walked again"
    with pytest.raises(ValueError, match="capacity must be at least 1, got 0"):
        Verdicts(capacity=0)


async def until(check: Callable[[], bool], message: str) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while not check():
        assert asyncio.get_running_loop().time() < deadline, message
        await asyncio.sleep(0.02)


async def test_a_deleted_child_is_forgotten_by_its_watched_copy(client: KubeClient) -> None:
    watched = Watched(client, CONFIGMAPS, NS, LABEL)
    await watched.start()
    try:
        [(desired, stored), (other, kept)] = await applied(client, "gone", "kept")
        for plan, child in ((desired, stored), (other, kept)):
            VERDICTS.judged(drifted, plan, child)
        uid = stored["metadata"]["uid"]
        assert uid in VERDICTS

        await client.delete(CONFIGMAPS.path(NS, "gone"))
        await until(lambda: uid not in VERDICTS, "the deleted child's verdict was kept")
        assert kept["metadata"]["uid"] in VERDICTS, "the others' stay"
    finally:
        await watched.stop()


async def test_a_child_made_again_under_its_name_replaces_the_old_ones_verdict(client: KubeClient) -> None:
    watched = Watched(client, CONFIGMAPS, NS, LABEL)  # not watching: only what the operator wrote
    [(desired, stored)] = await applied(client, "a")
    watched.remember(stored)
    VERDICTS.judged(drifted, desired, stored)

    await client.delete(CONFIGMAPS.path(NS, "a"))
    [(_, again)] = await applied(client, "a")
    watched.remember(again)
    assert stored["metadata"]["uid"] not in VERDICTS, "the deleted child's verdict was kept"


async def test_a_child_deleted_while_unwatched_is_forgotten_at_the_next_list(client: KubeClient) -> None:
    watched = Watched(client, CONFIGMAPS, NS, LABEL)
    [(desired, stored)] = await applied(client, "a")
    await watched.start()
    await watched.stop()
    VERDICTS.judged(drifted, desired, stored)

    await client.delete(CONFIGMAPS.path(NS, "a"))
    await watched.start()  # as after `410 Gone`: the list no longer has it
    try:
        assert stored["metadata"]["uid"] not in VERDICTS, "the deleted child's verdict was kept"
    finally:
        await watched.stop()
