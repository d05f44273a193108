"""A FailoverGroup round reads the lag of the ReplicationTasks copying between its members from their
status in the API server: the `LosslessFailover` condition and `status.replication` say what a failover
now would leave behind, and a planned switch waits for it."""

from __future__ import annotations

from typing import Any

import pytest
from test_planned_switch import BEHIND, CAUGHT_UP, task
from test_reconcile import NS, body, by_type, client, emulator, runtime  # noqa: F401 - the fixtures

from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.reconcile.failovergroup import reconcile
from federator_emulator.server import RunningEmulator

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

TASKS = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"


async def put_task(api: KubeClient, lag: dict[str, Any]) -> None:
    found = task("weu-to-neu", "weu", "neu", None)
    if await api.get(f"{TASKS}/weu-to-neu") is None:
        await api.create(TASKS, {"apiVersion": "federator.io/v1alpha1", "kind": "ReplicationTask", **found})
    await api.patch(f"{TASKS}/weu-to-neu/status", {"status": {"lag": lag}})


async def test_the_group_reports_and_waits_for_the_replication_to_its_secondary(
    client: KubeClient,  # noqa: F811 - the fixture
    emulator: RunningEmulator,  # noqa: F811
) -> None:
    await put_task(client, BEHIND)
    group = body()
    first = (await reconcile(ClusterReads.direct(client), runtime(emulator), group)).result
    assert by_type(first.conditions)["LosslessFailover"] == ("False", "ReplicationBehind")
    assert first.status_patch["replication"] == [
        {"member": "neu", "tasks": ["weu-to-neu"], "eventsBehind": 120, "rpoSeconds": 4.5}
    ]

    planned = {**group, "spec": {**group["spec"], "activeMember": "neu", "switching": {"planned": True}}}
    planned["status"] = first.status_patch
    waiting = await reconcile(ClusterReads.direct(client), runtime(emulator), planned)
    assert waiting.switches == [] and waiting.result.status_patch["pendingSwitch"]["member"] == "neu"

    await put_task(client, CAUGHT_UP)
    planned["status"] = {**first.status_patch, **waiting.result.status_patch}
    done = await reconcile(ClusterReads.direct(client), runtime(emulator), planned)
    assert [(s.target, s.cause) for s in done.switches] == [("neu", "planned")]
    assert (
        done.result.status_patch["producerMember"] == "neu"
        and done.result.status_patch["pendingSwitch"] is None
    )
