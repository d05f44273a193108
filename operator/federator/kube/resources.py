"""Every resource the operator and the plugin name, in one catalogue: Federator's own kinds derived from
the contract's `Kind` (its API version and plural), the core resources by their API names. Spark
applications are named by their launcher (planning/launchers: `API_VERSION`, `PLURAL`)."""

from __future__ import annotations

from dataclasses import dataclass

from federator_contract.api.kinds import (
    FAILOVER_GROUP,
    REPLICATION_APPLICATION,
    REPLICATION_TASK,
    SERVICE_BUS_MIRROR,
    Kind,
)


@dataclass(frozen=True)
class ResourceRef:
    api_version: str
    plural: str

    @classmethod
    def of(cls, kind: Kind) -> ResourceRef:
        return cls(kind.api_version, kind.plural)

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        parts = [base]
        if namespace is not None:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


REPLICATION_TASKS = ResourceRef.of(REPLICATION_TASK)
SERVICE_BUS_MIRRORS = ResourceRef.of(SERVICE_BUS_MIRROR)
FAILOVER_GROUPS = ResourceRef.of(FAILOVER_GROUP)
REPLICATION_APPLICATIONS = ResourceRef.of(REPLICATION_APPLICATION)

CONFIGMAPS = ResourceRef("v1", "configmaps")
SECRETS = ResourceRef("v1", "secrets")
SERVICE_ACCOUNTS = ResourceRef("v1", "serviceaccounts")
PERSISTENT_VOLUME_CLAIMS = ResourceRef("v1", "persistentvolumeclaims")
PODS = ResourceRef("v1", "pods")
NAMESPACES = ResourceRef("v1", "namespaces")
EVENTS = ResourceRef("v1", "events")
