"""A FailoverGroup's switch wakes the ReplicationTasks that follow it: with an observe interval of ten
minutes, only the wake can explain a follower planned onto the new member within seconds, and a task that
follows another group makes no pass at all."""

from __future__ import annotations

import json
from typing import Any

import pytest

from federator.handlers.followers import followed_in
from federator.settings import OperatorSettings
from federator_emulator.testing import EmulatorFactory
from support.kopf_runner import reconcile_passes
from support.kube import KubeServer
from support.polling import eventually, eventually_more

pytestmark = pytest.mark.slow

MEMBERS = ("weu", "neu")
GROUPS, TASKS, APPS, CONFIGMAPS, SECRETS = (
    f"{api}/namespaces/default/{plural}"
    for api, plural in [
        ("/apis/federator.io/v1alpha1", "failovergroups"),
        ("/apis/federator.io/v1alpha1", "replicationtasks"),
        ("/apis/sparkoperator.k8s.io/v1beta2", "sparkapplications"),
        ("/api/v1", "configmaps"),
        ("/api/v1", "secrets"),
    ]
)


@pytest.fixture
def operator_settings() -> OperatorSettings:
    """Observe passes ten minutes apart: within a test, a task's pass after its first is a wake's."""
    return OperatorSettings(observe_interval_seconds=600, retry_seconds=1)


def group(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "FailoverGroup",
        "metadata": {"name": name},
        "spec": {
            "mode": "manual",
            "primaryMember": "weu",
            "members": [
                {
                    "name": m,
                    "endpoint": f"{name}-{m}.servicebus.windows.net",
                    "connection": {"secretRef": {"name": f"{m}-conn"}},
                }
                for m in MEMBERS
            ],
            "probe": {"periodSeconds": 1, "timeoutSeconds": 3, "failureThreshold": 2},
            "failback": {"drainEntities": [{"queueName": "orders"}]},
        },
    }


def following_task(name: str, followed: str) -> dict[str, Any]:
    source = {"connection": {"failoverGroupRef": {"name": followed}}, "queueName": "orders"}
    target = {"connection": {"secretRef": {"name": "weu-conn"}}, "eventHubName": "archive"}
    spec = {"source": {"serviceBus": source}, "targets": [{"name": "archive", "eventHub": target}]}
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": name},
        "spec": spec,
    }


def get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def phase(kube: KubeServer, name: str) -> str | None:
    return ((get(kube, f"{GROUPS}/{name}") or {}).get("status") or {}).get("phase")


def follows(kube: KubeServer, task: str) -> str | None:
    """The member its task config reads."""
    config = get(kube, f"{CONFIGMAPS}/{task}-task")
    return json.loads(config["data"]["task.json"])["following"]["member"] if config else None


def app_spec(kube: KubeServer, task: str) -> dict[str, Any] | None:
    """The spec of the task's SparkApplication (its own host, which a switch leaves as it is)."""
    return (get(kube, f"{APPS}/{task}") or {}).get("spec")


def members_with_secrets(emulator_factory: EmulatorFactory, kube: KubeServer) -> None:
    """The groups' members as emulator namespaces with queue `orders`, and a Secret of each one's connection
    string (`<member>-conn`)."""
    emulator = emulator_factory(
        {"namespaces": [{"name": m, "queues": [{"name": "orders"}]} for m in MEMBERS]}
    )
    for m in MEMBERS:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{m}-conn"}}
        kube.request(
            "POST", SECRETS, {**secret, "stringData": {"connectionString": emulator.connection_string(m)}}
        )


def follower_of_a_group(emulator_factory: EmulatorFactory, kube: KubeServer, task: dict[str, Any]) -> None:
    """Group `billing` over the emulator's members, settled (Normal), and ``task`` created."""
    members_with_secrets(emulator_factory, kube)
    kube.request("POST", GROUPS, group("billing"))
    eventually(lambda: phase(kube, "billing") == "Normal", timeout=30)
    kube.request("POST", TASKS, task)


def test_a_switch_reaches_the_tasks_following_the_group_without_waiting_for_their_observe_pass(
    emulator_factory: EmulatorFactory, federator_operator: KubeServer
) -> None:
    kube = federator_operator
    members_with_secrets(emulator_factory, kube)
    for name in ("billing", "audit"):
        kube.request("POST", GROUPS, group(name))
    eventually(lambda: phase(kube, "billing") == phase(kube, "audit") == "Normal", timeout=30)
    kube.request("POST", TASKS, following_task("archive", "billing"))
    kube.request("POST", TASKS, following_task("ledger", "audit"))
    eventually(lambda: follows(kube, "archive") == "weu" and app_spec(kube, "archive"), timeout=30)
    eventually(lambda: follows(kube, "ledger") == "weu" and app_spec(kube, "ledger"), timeout=30)
    app_before = app_spec(kube, "archive")
    # Settled: the groups keep probing; the tasks, created and applied, wait out their ten minutes.
    eventually_more(lambda: reconcile_passes("FailoverGroup"), 3, message="the groups made no more rounds")
    passes = reconcile_passes("ReplicationTask")

    kube.request(
        "PATCH", f"{GROUPS}/billing", {"spec": {"activeMember": "neu"}}, "application/merge-patch+json"
    )
    eventually(
        lambda: follows(kube, "archive") == "neu",
        timeout=30,
        message="the follower was not planned onto the new member",
    )
    assert ((get(kube, f"{GROUPS}/billing") or {}).get("status") or {}).get("consumerMember") == "neu"
    eventually_more(lambda: reconcile_passes("FailoverGroup"), 3, message="the groups made no more rounds")
    assert reconcile_passes("ReplicationTask") - passes == 1, "only the follower of billing makes a pass"
    assert follows(kube, "ledger") == "weu"
    assert app_spec(kube, "archive") == app_before, "only the follower's config changed, not its application"


def test_the_index_names_each_group_a_task_follows_once_and_none_for_a_spec_that_cannot_run() -> None:
    spec = following_task("archive", "billing")["spec"]
    copy = {"connection": {"failoverGroupRef": {"name": "dr"}}, "queueName": "orders"}
    spec["targets"] += [{"name": "copy", "serviceBus": copy}, {"name": "again", "serviceBus": copy}]
    assert followed_in(spec) == ["billing", "dr"]
    unnamed = {"source": {"eventHub": {"connection": {"failoverGroupRef": {}}}}, "targets": 3}
    assert followed_in(unnamed) == []
    assert followed_in({}) == []
