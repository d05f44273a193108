"""A namespace connection of a spec → what an SDK client needs to reach it. The operator reads a Secret's
value only here, to probe; it stays in memory, never in status, Events, logs or metrics."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from federator import reasons
from federator.planning.errors import PlanningError
from federator.provision.secrets import SecretSource, secret_values
from federator.validation.credential_scope import (
    BRING_YOUR_OWN,
    CredentialScope,
)
from federator_contract.api.base import EndpointConnection, NamespaceConnection, WorkloadIdentity


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
    *,
    scope: CredentialScope,
) -> MemberConnection:
    """Raises ManagementError (SecretNotFound, SecretKeyNotFound) or PlanningError (EmulatorOnlyInLocalMode,
    and for a workload identity, which the operator signs in with itself: EndpointHostNotAllowed,
    OperatorIdentityNotAllowed) when it cannot. `emulators` maps emulator namespace names to connection
    strings (local mode only); `scope` is the installer's credential scope."""
    if connection.secret_ref is not None:
        ref = connection.secret_ref
        values = await secret_values(client, namespace, ref.name, (ref.key,))
        return MemberConnection(connection_string=values[ref.key])
    if connection.workload_identity is not None:
        identity = connection.workload_identity
        _refuse_out_of_scope(identity, namespace, where, scope)
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


def _refuse_out_of_scope(
    identity: WorkloadIdentity, namespace: str, where: str, scope: CredentialScope
) -> None:
    """The operator's own token goes only to Azure's hosts, for the namespaces the installer lists."""
    host = scope.host_refusal(identity)
    if host is not None:
        raise PlanningError(reasons.ENDPOINT_HOST_NOT_ALLOWED, f"{where}: {host}")
    lent = scope.identity_refusal(namespace)
    if lent is not None:
        raise PlanningError(
            reasons.OPERATOR_IDENTITY_NOT_ALLOWED,
            f"{where} signs in with workload identity, as the operator; {lent}: {BRING_YOUR_OWN}",
        )
