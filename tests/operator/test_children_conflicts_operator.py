"""The operator reports a child's field that another field manager took (Stalled, `FieldManagerConflict`,
naming the field and the manager) instead of overwriting it, and recovers once the child is given back."""

from __future__ import annotations

from typing import Any

import pytest

from support.kube import KubeServer
from support.orders import orders_secret, orders_service_account, orders_task
from support.polling import eventually

NS = "default"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
CONFIG_MAP = f"/api/v1/namespaces/{NS}/configmaps/orders-task"


@pytest.fixture(autouse=True)
def spark_service_account(kube: KubeServer) -> None:
    kube.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())


def get(kube: KubeServer, path: str) -> Any:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def stalled(kube: KubeServer) -> dict[str, Any] | None:
    conditions = ((get(kube, f"{RT}/orders") or {}).get("status") or {}).get("conditions") or []
    found = [c for c in conditions if c["type"] == "Stalled" and c["status"] == "True"]
    return found[0] if found else None


def test_a_child_field_another_manager_took_is_reported_then_recovered(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", f"/api/v1/namespaces/{NS}/secrets", orders_secret())
    kube.request("POST", RT, orders_task("orders", NS))
    planned = eventually(lambda: get(kube, CONFIG_MAP))["data"]["task.json"]
    eventually(lambda: get(kube, f"{APPS}/orders"))

    edit = {"data": {"task.json": "{}"}}
    kube.request("PATCH", CONFIG_MAP + "?fieldManager=kubectl-edit", edit, "application/merge-patch+json")
    condition = eventually(
        lambda: (c := stalled(kube)) and c["reason"] == "FieldManagerConflict" and c,
        message="the conflict is not reported",
    )
    assert ".data.task.json" in condition["message"] and "kubectl-edit" in condition["message"]
    assert get(kube, CONFIG_MAP)["data"]["task.json"] == "{}", "another manager's field is never forced"

    kube.request("DELETE", CONFIG_MAP)  # given back: the operator applies it again as planned
    eventually(lambda: (get(kube, CONFIG_MAP) or {}).get("data", {}).get("task.json") == planned)
    eventually(lambda: stalled(kube) is None, message="the task stays Stalled after the conflict went")
    assert kube.server_errors() == []
