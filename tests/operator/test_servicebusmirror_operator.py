"""The operator turns a ServiceBusMirror into provisioned subscriptions on every member (in the emulator,
over ARM and the administration API) and owned ReplicationTasks, rolls members and pairs up into honest
status, repairs drift, and removes exactly what it created when the mirror is deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus.management import ServiceBusAdministrationClient

from federator.handlers.context import OperatorContext
from federator.provision.environment import ManagementEnvironment
from federator.settings import OperatorSettings
from federator_emulator.server import RunningEmulator, start_emulator
from federator_emulator.testing import AsyncEmulatorCredential
from support.azure_clients import management_connection_string
from support.kopf_runner import reconcile_passes, running_operator
from support.kube import KubeServer
from support.polling import eventually, eventually_more

NS = "default"
MIRRORS = f"/apis/federator.io/v1alpha1/namespaces/{NS}/servicebusmirrors"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
APPLICATIONS = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationapplications"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
EVENTS = f"/api/v1/namespaces/{NS}/events"
MERGE = "application/merge-patch+json"


@pytest.fixture
def sb() -> Iterator[RunningEmulator]:
    config = {
        "namespaces": [
            {"name": name, "topics": [{"name": "orders", "subscriptions": [{"name": "app"}]}]}
            for name in ("sbwest", "sbeast", "sbnorth")
        ]
    }
    with start_emulator(config) as emulator:
        yield emulator


@pytest.fixture
def operator(
    sb: RunningEmulator, kube: KubeServer, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KubeServer]:
    """Federator's handlers with Azure management pointed at the emulator (re-read every second)."""
    import federator.handlers  # noqa: F401 — registers the handlers

    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    management = ManagementEnvironment(
        arm_endpoint=sb.arm_endpoint,
        connection_verify=str(sb.ca_path),
        credential_factory=lambda source: AsyncEmulatorCredential(sb),
        drift_interval_seconds=1,
    )
    settings = OperatorSettings(observe_interval_seconds=1, retry_seconds=1)
    memo = OperatorContext(settings, management, serve_metrics=False)
    with running_operator(namespaces=[NS], memo=memo):
        yield kube


def admin(sb: RunningEmulator, namespace: str) -> ServiceBusAdministrationClient:
    return ServiceBusAdministrationClient.from_connection_string(
        management_connection_string(sb, namespace), connection_verify=str(sb.ca_path)
    )


def subscriptions(sb: RunningEmulator, namespace: str) -> dict[str, str | None]:
    with admin(sb, namespace) as client:
        return {s.name: s.user_metadata for s in client.list_subscriptions("orders")}


def secret(name: str, connection_string: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "stringData": {"connectionString": connection_string},
    }


def arm(name: str, namespace: str) -> dict[str, Any]:
    return {
        "name": name,
        "connection": {"secretRef": {"name": f"{name}-conn"}},
        "management": {
            "arm": {
                "subscriptionId": "00000000-0000-0000-0000-000000000000",
                "resourceGroup": "emulator",
                "namespaceName": namespace,
                "credential": {"workloadIdentity": {"fullyQualifiedNamespace": f"{namespace}.example"}},
            }
        },
    }


def mirror(*members: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ServiceBusMirror",
        "metadata": {"name": "orders", "namespace": NS},
        "spec": {"pattern": "allActive", "topicName": "orders", "members": list(members)},
    }


def setup_members(kube: KubeServer, sb: RunningEmulator) -> list[dict[str, Any]]:
    """west through ARM, east through the administration API with a Manage connection string."""
    kube.request("POST", SECRETS, secret("east-conn", management_connection_string(sb, "sbeast")))
    kube.request("POST", SECRETS, secret("west-conn", sb.connection_string("sbwest")))
    return [
        arm("west", "sbwest"),
        {"name": "east", "connection": {"secretRef": {"name": "east-conn"}}, "management": {"dataPlane": {}}},
    ]


def get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def condition(kube: KubeServer, type_: str) -> dict[str, Any]:
    found = get(kube, f"{MIRRORS}/orders") or {}
    return next((c for c in (found.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


def events(kube: KubeServer) -> list[tuple[str, str]]:
    return [(e.get("reason", ""), e.get("message", "")) for e in kube.request("GET", EVENTS)[1]["items"]]


def run_spark_app(kube: KubeServer, name: str, state: str = "RUNNING") -> None:
    eventually(lambda: get(kube, f"{APPS}/{name}"), message=f"no SparkApplication {name}")
    kube.request("PATCH", f"{APPS}/{name}/status", {"status": {"applicationState": {"state": state}}}, MERGE)


@pytest.mark.slow
def test_a_mirror_provisions_its_members_runs_owned_tasks_and_becomes_ready(
    operator: KubeServer, sb: RunningEmulator
) -> None:
    kube = operator
    kube.request("POST", MIRRORS, mirror(*setup_members(kube, sb)))

    def provisioned() -> list[str]:
        members = ((get(kube, f"{MIRRORS}/orders") or {}).get("status") or {}).get("members") or []
        return [m["name"] for m in members if m["state"] == "Provisioned"]

    eventually(lambda: provisioned() == ["west", "east"], message="members not provisioned")
    body = get(kube, f"{MIRRORS}/orders")
    assert body is not None
    assert body["status"]["members"][0]["entities"] == ["topics/orders/subscriptions/repl-east"]
    assert subscriptions(sb, "sbwest") == {
        "app": None,
        "repl-east": "federator.io/servicebusmirror=default/orders",
    }
    assert subscriptions(sb, "sbeast") == {
        "app": None,
        "repl-west": "federator.io/servicebusmirror=default/orders",
    }

    for name in ("orders-west-east", "orders-east-west"):
        task = eventually(lambda name=name: get(kube, f"{RT}/{name}"), message=f"no task {name}")
        assert task["metadata"]["ownerReferences"][0]["uid"] == body["metadata"]["uid"]
        assert task["metadata"]["labels"]["federator.io/servicebusmirror"] == "orders"
        # The mirror's tasks share one Spark application, of the ReplicationApplication the mirror owns.
        assert task["spec"]["runtime"]["applicationRef"] == {"name": "orders"}
        assert get(kube, f"{APPS}/{name}") is None
    application = get(kube, f"{APPLICATIONS}/orders")
    assert application is not None
    assert application["metadata"]["ownerReferences"][0]["uid"] == body["metadata"]["uid"]
    eventually(lambda: condition(kube, "Ready").get("reason") == "PairsPending")
    assert "west → east (ReplicationTask orders-west-east)" in condition(kube, "Ready")["message"]
    assert condition(kube, "RulesProvisioned")["status"] == "True"

    run_spark_app(kube, "orders")
    eventually(
        lambda: condition(kube, "Ready").get("reason") == "Mirroring", message="the mirror never became Ready"
    )
    ready = get(kube, f"{MIRRORS}/orders")
    assert ready is not None
    assert ready["status"]["observedGeneration"] == ready["metadata"]["generation"]
    assert [(p["source"], p["target"], p["ready"]) for p in ready["status"]["pairs"]] == [
        ("west", "east", "True"),
        ("east", "west", "True"),
    ]
    assert condition(kube, "TasksReady")["status"] == "True"

    # Status is written only when something changes: members are re-read every second, nothing moves.
    # Three more passes counted: the first two are done, their writes included.
    version = ready["metadata"]["resourceVersion"]
    eventually_more(lambda: reconcile_passes("ServiceBusMirror"), 3, message="the mirror is not observed")
    assert (get(kube, f"{MIRRORS}/orders") or {})["metadata"]["resourceVersion"] == version

    with admin(sb, "sbwest") as client:
        client.delete_subscription("orders", "repl-east")
    eventually(
        lambda: "repl-east" in subscriptions(sb, "sbwest"), message="deleted subscription not recreated"
    )
    eventually(lambda: any(r == "DriftCorrected" and "repl-east" in m for r, m in events(kube)))
    assert kube.server_errors() == []


@pytest.mark.slow
def test_a_failing_member_is_named_and_healthy_pairs_still_run(
    operator: KubeServer, sb: RunningEmulator
) -> None:
    kube = operator
    members = setup_members(kube, sb)
    with admin(sb, "sbnorth") as client:
        client.create_subscription("orders", "repl-west", user_metadata="team-x")
    kube.request("POST", SECRETS, secret("north-conn", sb.connection_string("sbnorth")))
    kube.request("POST", MIRRORS, mirror(*members, arm("north", "sbnorth")))

    eventually(lambda: condition(kube, "Ready").get("reason") == "EntityNotOwned")
    ready = condition(kube, "Ready")
    assert ready["status"] == "False" and "member north" in ready["message"]
    assert "repl-west" in ready["message"]
    assert condition(kube, "Stalled")["status"] == "True"
    eventually(lambda: get(kube, f"{RT}/orders-west-east") and get(kube, f"{RT}/orders-east-west"))
    assert get(kube, f"{RT}/orders-west-north") is None, "no task for a pair whose member is not provisioned"
    assert subscriptions(sb, "sbnorth")["repl-west"] == "team-x", "someone else's subscription is left alone"

    with admin(sb, "sbnorth") as client:
        client.delete_subscription("orders", "repl-west")
    eventually(lambda: get(kube, f"{RT}/orders-west-north"), message="the member did not recover by itself")
    eventually(lambda: condition(kube, "Ready").get("reason") == "PairsPending")

    # The pairs share the mirror's application: its driver failing fails every pair, each named.
    run_spark_app(kube, "orders", "FAILED")
    eventually(lambda: condition(kube, "Ready").get("reason") == "PairFailed")
    eventually(
        lambda: "north → east (ReplicationTask orders-north-east)" in condition(kube, "Ready")["message"],
        message="the failed pairs are not each named",
    )


@pytest.mark.slow
def test_deleting_the_mirror_removes_what_it_provisioned_and_nothing_else(
    operator: KubeServer, sb: RunningEmulator
) -> None:
    kube = operator
    kube.request("POST", MIRRORS, mirror(*setup_members(kube, sb)))
    with admin(sb, "sbwest") as client:
        client.create_subscription("orders", "audit")
    eventually(lambda: get(kube, f"{RT}/orders-east-west"))
    eventually(lambda: "repl-west" in subscriptions(sb, "sbeast"))
    kube.request("DELETE", f"{MIRRORS}/orders")
    eventually(lambda: get(kube, f"{MIRRORS}/orders") is None, message="the mirror was not released")
    assert subscriptions(sb, "sbwest") == {"app": None, "audit": None}
    assert subscriptions(sb, "sbeast") == {"app": None}
    eventually(
        lambda: get(kube, f"{RT}/orders-west-east") is None and get(kube, f"{RT}/orders-east-west") is None,
        message="the generated tasks were not deleted",
    )
    eventually(lambda: get(kube, f"{APPLICATIONS}/orders") is None, message="the mirror's application stays")
    assert any(r == "Deleted" and "repl-east" in m for r, m in events(kube))


@pytest.mark.slow
def test_a_member_that_cannot_be_cleaned_does_not_hold_the_mirror_forever(
    operator: KubeServer, sb: RunningEmulator
) -> None:
    kube = operator
    kube.request("POST", MIRRORS, mirror(*setup_members(kube, sb)))
    eventually(
        lambda: "repl-west" in subscriptions(sb, "sbeast") and "repl-east" in subscriptions(sb, "sbwest")
    )
    eventually(lambda: condition(kube, "RulesProvisioned").get("status") == "True")
    kube.request("DELETE", f"{SECRETS}/east-conn")  # e.g. `kubectl delete -f dir/` removed it first
    kube.request("DELETE", f"{MIRRORS}/orders")
    eventually(lambda: get(kube, f"{MIRRORS}/orders") is None, message="the mirror was not released")
    assert "repl-east" not in subscriptions(sb, "sbwest")
    assert "repl-west" in subscriptions(sb, "sbeast"), "east could not be reached without its Secret"
    [warning] = [m for r, m in events(kube) if r == "CleanupIncomplete"]
    assert "Secret default/east-conn" in warning and "topics/orders/subscriptions/repl-west" in warning
