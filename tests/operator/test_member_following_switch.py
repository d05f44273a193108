"""A task of a shared application that follows a FailoverGroup moves to the new member by its ConfigMap
alone: the shared Spark application (and so every other member's query) is not touched, and the switch is
announced as such, not as drift."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_following_wakeups import GROUPS, follower_of_a_group, following_task, get

from federator_emulator.testing import EmulatorFactory
from support.kube import KubeServer
from support.polling import eventually

pytestmark = pytest.mark.slow

NS = "default"
RAPP = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationapplications"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
EVENTS = f"/api/v1/namespaces/{NS}/events"


def member_of_shared(name: str, followed: str) -> dict[str, Any]:
    task = following_task(name, followed)
    task["spec"]["runtime"] = {"applicationRef": {"name": "shared"}}
    return task


def followed_member(kube: KubeServer, task: str) -> str | None:
    config = get(kube, f"{CONFIGMAPS}/{task}-task")
    return json.loads(config["data"]["task.json"])["following"]["member"] if config else None


def events(kube: KubeServer) -> list[tuple[str, str]]:
    return [(e.get("reason", ""), e.get("message", "")) for e in kube.request("GET", EVENTS)[1]["items"]]


def test_a_switch_rewrites_only_the_members_config_and_leaves_the_shared_application_alone(
    emulator_factory: EmulatorFactory, federator_operator: KubeServer
) -> None:
    kube = federator_operator
    kube.request(
        "POST",
        RAPP,
        {
            "apiVersion": "federator.io/v1alpha1",
            "kind": "ReplicationApplication",
            "metadata": {"name": "shared"},
            "spec": {},
        },
    )
    follower_of_a_group(emulator_factory, kube, member_of_shared("archive", "billing"))
    eventually(lambda: followed_member(kube, "archive") == "weu", timeout=30)
    # The application has taken the member in (its Secrets are in the pods) before the switch.
    app = eventually(
        lambda: (
            (a := get(kube, f"{APPS}/shared"))
            and "weu-conn" in json.dumps(a["spec"]["driver"]["template"])
            and a
        ),
        timeout=30,
    )

    kube.request(
        "PATCH", f"{GROUPS}/billing", {"spec": {"activeMember": "neu"}}, "application/merge-patch+json"
    )
    eventually(lambda: followed_member(kube, "archive") == "neu", timeout=30, message="not moved to neu")
    switched = eventually(lambda: [m for r, m in events(kube) if r == "FollowedMemberSwitched"], timeout=30)
    assert "billing/neu (was billing/weu)" in switched[0]
    assert "its query restarts in the shared application" in switched[0]
    assert not [m for r, m in events(kube) if r == "DriftCorrected"], "a switch is not drift"
    after = get(kube, f"{APPS}/shared")
    assert after is not None and after["spec"] == app["spec"], "the shared application must not restart"
    assert get(kube, f"{APPS}/archive") is None
