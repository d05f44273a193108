"""The `orders` ReplicationTask of examples/eh-replication-cluster.yaml and the Secret it references: what
the operator's tests (in-process and in its image) reconcile."""

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
