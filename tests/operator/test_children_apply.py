"""Children are written with server-side apply under one field manager, `federator`: drift on a field
Federator holds is repaired by applying again, what other managers set stays theirs, and a field another
manager took is reported, never forced. Against the faithful fake API server, which manages fields as the
Kubernetes docs describe (tests/k8s/test_server_side_apply.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from federator.apply.children import ApplyConflict, Outcome, ensure
from federator.kube.client import FIELD_MANAGER, MERGE_PATCH, KubeClient
from federator.kube.resources import CONFIGMAPS
from support.kube import KubeServer

pytestmark = pytest.mark.asyncio

NS = "default"
PATH = CONFIGMAPS.path(NS, "orders-task")


@pytest_asyncio.fixture
async def client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"User-Agent": "federator-operator/0.1"}))
    yield found
    await found.close()


@pytest_asyncio.fixture
async def someone(kube: KubeServer) -> AsyncIterator[KubeClient]:
    """Another client: its merge patches are recorded under its User-Agent's name, `kubectl-edit`."""
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"User-Agent": "kubectl-edit/v1.31"}))
    yield found
    await found.close()


def planned(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "orders-task", "namespace": NS, "labels": {"app.kubernetes.io/managed-by": "x"}},
        "data": data,
    }


def managers(stored: dict[str, Any]) -> dict[str, str]:
    return {e["manager"]: e["operation"] for e in stored["metadata"].get("managedFields") or []}


async def test_a_child_is_created_by_an_apply_and_left_alone_while_nothing_drifts(client: KubeClient) -> None:
    outcome, stored = await ensure(client, CONFIGMAPS, planned(task="1"), None)
    assert outcome is Outcome.CREATED and stored["data"] == {"task": "1"}
    assert managers(stored) == {FIELD_MANAGER: "Apply"}, "applied by one field manager"

    again, same = await ensure(client, CONFIGMAPS, planned(task="1"), stored)
    assert again is Outcome.UNCHANGED and same is stored, "nothing drifted: no request"


async def test_a_field_federator_holds_removed_by_hand_is_applied_again(
    client: KubeClient, someone: KubeClient
) -> None:
    _, stored = await ensure(client, CONFIGMAPS, planned(task="1"), None)
    edited = await someone.patch(PATH, {"data": {"task": None}, "metadata": {"labels": None}}, MERGE_PATCH)
    assert "task" not in (edited.get("data") or {})

    outcome, restored = await ensure(client, CONFIGMAPS, planned(task="1"), edited)
    assert outcome is Outcome.RESTORED
    assert (
        restored["data"] == {"task": "1"} and restored["metadata"]["labels"] == stored["metadata"]["labels"]
    )


async def test_what_another_manager_set_and_federator_does_not_apply_stays(
    client: KubeClient, someone: KubeClient
) -> None:
    await ensure(client, CONFIGMAPS, planned(task="1"), None)
    theirs = {"metadata": {"annotations": {"team": "payments"}}, "data": {"notes": "keep me"}}
    await someone.patch(PATH, theirs, MERGE_PATCH)

    outcome, stored = await ensure(client, CONFIGMAPS, planned(task="2"), await client.get(PATH))
    assert outcome is Outcome.RESTORED and stored["data"] == {"task": "2", "notes": "keep me"}
    assert stored["metadata"]["annotations"] == {"team": "payments"}


async def test_a_field_federator_no_longer_plans_is_removed_by_the_next_apply(client: KubeClient) -> None:
    _, stored = await ensure(client, CONFIGMAPS, planned(task="1", extra="old"), None)
    outcome, now = await ensure(client, CONFIGMAPS, planned(task="1"), stored)
    assert outcome is Outcome.RESTORED and now["data"] == {"task": "1"}


async def test_a_field_another_manager_changed_is_a_conflict_not_overwritten(
    client: KubeClient, someone: KubeClient
) -> None:
    await ensure(client, CONFIGMAPS, planned(task="1"), None)
    edited = await someone.patch(PATH, {"data": {"task": "by hand"}}, MERGE_PATCH)

    with pytest.raises(ApplyConflict) as raised:
        await ensure(client, CONFIGMAPS, planned(task="1"), edited)
    assert [(c.field, c.manager) for c in raised.value.conflicts] == [(".data.task", "kubectl-edit")]
    assert ".data.task (held by 'kubectl-edit')" in str(raised.value)
    assert (await client.get(PATH) or {})["data"] == {"task": "by hand"}, "never forced"


async def test_fields_federator_wrote_before_it_applied_are_taken_over(kube: KubeServer) -> None:
    """Objects the operator created before server-side apply hold its fields under its former name."""
    created = planned(task="1")
    kube.request("POST", CONFIGMAPS.path(NS) + "?fieldManager=federator-operator", created)
    async with aiohttp.ClientSession() as session:
        client = KubeClient(kube.url, session)
        outcome, stored = await ensure(client, CONFIGMAPS, planned(task="2"), await client.get(PATH))
    assert outcome is Outcome.RESTORED and stored["data"] == {"task": "2"}
    assert managers(stored).get(FIELD_MANAGER) == "Apply"


async def test_a_child_federator_wrote_before_it_applied_is_applied_once_to_hold_its_fields(
    kube: KubeServer, client: KubeClient
) -> None:
    kube.request("POST", CONFIGMAPS.path(NS) + "?fieldManager=federator-operator", planned(task="1"))
    outcome, stored = await ensure(client, CONFIGMAPS, planned(task="1"), await client.get(PATH))
    assert outcome is Outcome.UNCHANGED, "the same values: nothing to announce"
    assert managers(stored).get(FIELD_MANAGER) == "Apply"
    assert (await ensure(client, CONFIGMAPS, planned(task="1"), stored))[1] is stored, "then no request"


async def test_the_apply_request_is_the_documented_one(client: KubeClient, kube: KubeServer) -> None:
    await ensure(client, CONFIGMAPS, planned(task="1"), None)
    applied = [r for r in kube.emulator["patch"] if r.url.path == PATH][-1]
    assert applied.headers["Content-Type"] == "application/apply-patch+yaml"
    assert dict(applied.params) == {"fieldManager": FIELD_MANAGER}, "one manager, no force"
    assert json.loads(applied.body)["data"] == {"task": "1"}
