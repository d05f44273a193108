"""Azure Resource Manager credentials from an `ArmCredential` spec: a service principal read from a Secret,
or the pod's workload identity. For any controller that talks to ARM (Service Bus, DNS).

The factory that turns a `CredentialSource` into a token credential is injectable: production uses
`azure_identity`; tests and the emulator (which accepts any bearer token) pass their own.

    source = await credential_source(kube, namespace, spec)   # reads the Secret, if any
    credential = build_credential(source, factory)           # ManagementError if it cannot be built
    async with credential: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from azure.core.credentials_async import AsyncTokenCredential

from federator import reasons
from federator.provision.errors import ManagementError
from federator.provision.secrets import SecretSource, secret_values
from federator_contract.api.servicebusmirror import ArmCredential

SERVICE_PRINCIPAL_KEYS = ("tenantId", "clientId", "clientSecret")


@dataclass(frozen=True)
class ServicePrincipal:
    """A Microsoft Entra application with a client secret (the secret never shows in `repr`)."""

    tenant_id: str
    client_id: str
    client_secret: str = field(repr=False)


@dataclass(frozen=True)
class WorkloadIdentityLogin:
    """The pod's federated token (the workload identity webhook sets tenant and token file in the pod's
    environment); `client_id` None means the service account's annotated identity."""

    client_id: str | None = None


CredentialSource = ServicePrincipal | WorkloadIdentityLogin


class CredentialFactory(Protocol):
    def __call__(self, source: CredentialSource) -> AsyncTokenCredential: ...


def azure_identity(source: CredentialSource) -> AsyncTokenCredential:
    """The production factory: azure-identity's ClientSecretCredential or WorkloadIdentityCredential (the
    authority host follows `AZURE_AUTHORITY_HOST`, for sovereign clouds)."""
    from azure.identity.aio import ClientSecretCredential, WorkloadIdentityCredential

    if isinstance(source, ServicePrincipal):
        return ClientSecretCredential(source.tenant_id, source.client_id, source.client_secret)
    if source.client_id is None:
        return WorkloadIdentityCredential()
    return WorkloadIdentityCredential(client_id=source.client_id)


async def credential_source(kube: SecretSource, namespace: str, spec: ArmCredential) -> CredentialSource:
    """Who to log in as; reads the service principal's Secret (SecretNotFound / SecretKeyNotFound)."""
    if spec.service_principal_secret_ref is not None:
        name = spec.service_principal_secret_ref.name
        values = await secret_values(kube, namespace, name, SERVICE_PRINCIPAL_KEYS)
        return ServicePrincipal(values["tenantId"], values["clientId"], values["clientSecret"])
    identity = spec.workload_identity
    return WorkloadIdentityLogin(identity.client_id if identity is not None else None)


def build_credential(source: CredentialSource, factory: CredentialFactory) -> AsyncTokenCredential:
    """`factory(source)`, with a construction failure (e.g. workload identity not injected into the pod)
    as ManagementAuthFailed. The message never carries the client secret."""
    try:
        return factory(source)
    except ValueError as err:
        what = "service principal" if isinstance(source, ServicePrincipal) else "workload identity"
        raise ManagementError(
            reasons.MANAGEMENT_AUTH_FAILED, f"cannot use the {what}: {_without_secret(str(err), source)}"
        ) from None


def _without_secret(text: str, source: CredentialSource) -> str:
    if isinstance(source, ServicePrincipal) and source.client_secret:
        return text.replace(source.client_secret, "***")
    return text
