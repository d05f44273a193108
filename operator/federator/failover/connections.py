"""A namespace connection of a spec → what an SDK client needs to reach it. The operator reads a Secret's
value only here, to probe; it stays in memory, never in status, Events, logs or metrics."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from federator import reasons
from federator.planning.errors import PlanningError
from federator.provision.secrets import SecretSource, secret_values
from federator_contract.api.base import EndpointConnection, NamespaceConnection


@dataclass(frozen=True)
class MemberConnection:
    """A connection string (Secret, emulator), or a namespace host reached with workload identity."""

    connection_string: str | None = field(default=None, repr=False)
    fully_qualified_namespace: str | None = None
    client_id: str | None = None

    @property
    def identity(self) -> str:
        """Tells connections apart (client pools are keyed by it) without carrying the secret."""
        if self.connection_string is not None:
            return "sas:" + hashlib.sha256(self.connection_string.encode()).hexdigest()
        return f"identity:{self.fully_qualified_namespace}:{self.client_id or ''}"


async def resolve_connection(
    client: SecretSource,
    namespace: str,
    connection: NamespaceConnection | EndpointConnection,
    emulators: Mapping[str, str] | None = None,
    where: str = "connection",
) -> MemberConnection:
    """Raises ManagementError (SecretNotFound, SecretKeyNotFound) or PlanningError (EmulatorOnlyInLocalMode)
    when it cannot. `emulators` maps emulator namespace names to connection strings (local mode only)."""
    if connection.secret_ref is not None:
        ref = connection.secret_ref
        values = await secret_values(client, namespace, ref.name, (ref.key,))
        return MemberConnection(connection_string=values[ref.key])
    if connection.workload_identity is not None:
        identity = connection.workload_identity
        return MemberConnection(
            fully_qualified_namespace=identity.fully_qualified_namespace, client_id=identity.client_id
        )
    if connection.emulator is not None:
        found = (emulators or {}).get(connection.emulator.namespace)
        if found is None:
            raise PlanningError(
                reasons.EMULATOR_ONLY_IN_LOCAL_MODE,
                f"{where} points at the built-in emulator namespace {connection.emulator.namespace!r}, which "
                "exists only in local mode (`federator run`); use secretRef or workloadIdentity in a cluster",
            )
        return MemberConnection(connection_string=found)
    raise PlanningError(reasons.INVALID_SPEC, f"{where} names no namespace")
