"""The `orders` ReplicationTask of examples/eh-replication-cluster.yaml, the Secret it references and the
service account its Spark pods sign in as (its target uses workload identity): what the operator's tests
(in-process and in its image) reconcile."""

from __future__ import annotations

from typing import Any

import yaml

from .resources import ROOT

EXAMPLE = ROOT / "examples" / "eh-replication-cluster.yaml"


def orders_task(name: str = "orders", namespace: str = "default") -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["metadata"] = {"name": name, "namespace": namespace}
    return doc


def orders_secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "orders-weu"},
        "stringData": {"connectionString": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=eA=="},
    }


def orders_service_account(name: str = "federator-spark") -> dict[str, Any]:
    """The pods' service account, annotated with the client id of the example's workload identity."""
    connection = orders_task()["spec"]["targets"][0]["eventHub"]["connection"]
    annotations = {"azure.workload.identity/client-id": connection["workloadIdentity"]["clientId"]}
    metadata = {"name": name, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}
