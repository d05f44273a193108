"""What a tenant writes: ReplicationTasks in its own namespace, spoiled one field at a time by the tests."""

from __future__ import annotations

from typing import Any

from federator_contract.api.base import API_VERSION

NAMESPACE = "team-a"


def secret_connection(name: str, key: str) -> dict[str, Any]:
    return {"secretRef": {"name": name, "key": key}}


def replication_task(
    source: dict[str, Any] | None = None, target: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    """An Event Hubs → Event Hubs task of the tenant, its connection strings in the tenant's Secrets."""
    body: dict[str, Any] = {
        "source": {
            "eventHub": {"connection": source or secret_connection("orders-src", "connectionString"),
                         "eventHubName": "orders"}
        },
        "targets": [
            {
                "name": "copy",
                "eventHub": {"connection": target or secret_connection("orders-dst", "connectionString"),
                             "eventHubName": "orders"},
            }
        ],
        **spec,
    }
    metadata = {"name": "orders", "namespace": NAMESPACE}
    return {"apiVersion": API_VERSION, "kind": "ReplicationTask", "metadata": metadata, "spec": body}
