"""Where reconcile passes read the cluster: the API client (for what must be current: the reconciled
objects, FailoverGroups, discovery — and every write), the children as their watches keep them, and
Secrets, ServiceAccounts and claims through a short-lived cache. A pass with nothing to do then asks the
API server nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from federator.kube.children import ChildReader, DirectChildren
from federator.kube.client import KubeClient


class SecretSource(Protocol):
    """Where Secret objects are read, by API path: the cluster (`KubeClient`, `CachedSecrets`), Secrets
    already read (provision/secrets.py: `SecretsAtHand`), or in local mode the Secret documents of the
    manifest files (`federator.local.references.LocalSecrets`)."""

    async def get(self, path: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class ClusterReads:
    client: KubeClient
    children: ChildReader
    """The operator's children: task ConfigMaps, Spark applications, endpoints ConfigMaps, generated
    ReplicationTasks (kube/children.py)."""
    secrets: SecretSource
    """The Secrets specs reference (kube/cached.py)."""
    shared: SecretSource
    """The other objects the tasks' pods use by name, which many tasks share: their ServiceAccount, their
    checkpoint claim (kube/cached.py)."""

    @classmethod
    def direct(cls, client: KubeClient) -> ClusterReads:
        """Every read asks the API server (tests, one-off tools)."""
        return cls(client, DirectChildren(client), client, client)
