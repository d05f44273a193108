"""Azure Resource Manager credentials from an `ArmCredential` spec: a service principal read from a Secret,
the pod's workload identity, or a ServiceAccount of the resource's own namespace (its federated token from
the TokenRequest API: provision/serviceaccount.py). For any controller that talks to ARM (Service Bus, DNS).

The factory that turns a `CredentialSource` into a token credential is injectable: production uses
`azure_identity`; tests and the emulator (which accepts any bearer token) pass their own.

    source = await credential_source(kube, namespace, spec)   # reads the Secret, if any
    credential = build_credential(source, factory)           # ManagementError if it cannot be built
    async with credential: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

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


@dataclass(frozen=True)
class ServiceAccountLogin:
    """A ServiceAccount's federated token (from the TokenRequest API), presented as a client assertion for
    the Microsoft Entra identity the account is annotated with (the token never shows in `repr`)."""

    namespace: str
    name: str
    tenant_id: str
    client_id: str
    assertion: str = field(repr=False)


CredentialSource = ServicePrincipal | WorkloadIdentityLogin | ServiceAccountLogin


class CredentialFactory(Protocol):
    def __call__(self, source: CredentialSource) -> AsyncTokenCredential: ...


def azure_identity_factory(**options: Any) -> CredentialFactory:
    """A factory of azure-identity's ClientSecretCredential, ClientAssertionCredential or
    WorkloadIdentityCredential (the authority host follows `AZURE_AUTHORITY_HOST`, for sovereign clouds);
    `options` go to each (e.g. `connection_verify`, the CA bundle an authority in a private cloud needs)."""

    def factory(source: CredentialSource) -> AsyncTokenCredential:
        from azure.identity.aio import (
            ClientAssertionCredential,
            ClientSecretCredential,
            WorkloadIdentityCredential,
        )

        if isinstance(source, ServicePrincipal):
            return ClientSecretCredential(source.tenant_id, source.client_id, source.client_secret, **options)
        if isinstance(source, ServiceAccountLogin):
            assertion = source.assertion
            return ClientAssertionCredential(source.tenant_id, source.client_id, lambda: assertion, **options)
        if source.client_id is None:
            return WorkloadIdentityCredential(**options)
        return WorkloadIdentityCredential(client_id=source.client_id, **options)

    return factory


azure_identity = azure_identity_factory()
"""The production factory, with the system's CAs."""


async def credential_source(kube: SecretSource, namespace: str, spec: ArmCredential) -> CredentialSource:
    """Who to log in as, for a service principal (reads its Secret: SecretNotFound / SecretKeyNotFound) or
    the operator's workload identity. A ServiceAccount needs the TokenRequest API: `login.arm_login`."""
    if spec.service_principal_secret_ref is not None:
        name = spec.service_principal_secret_ref.name
        values = await secret_values(kube, namespace, name, SERVICE_PRINCIPAL_KEYS)
        return ServicePrincipal(values["tenantId"], values["clientId"], values["clientSecret"])
    if spec.workload_identity is None:  # never fall back to the operator's identity
        raise ManagementError(
            reasons.INVALID_SPEC, "a serviceAccount credential is signed in by provision/login.py (arm_login)"
        )
    return WorkloadIdentityLogin(spec.workload_identity.client_id)


def build_credential(source: CredentialSource, factory: CredentialFactory) -> AsyncTokenCredential:
    """`factory(source)`, with a construction failure (e.g. workload identity not injected into the pod)
    as ManagementAuthFailed. The message never carries the client secret."""
    try:
        return factory(source)
    except ValueError as err:
        what = {ServicePrincipal: "service principal", ServiceAccountLogin: "ServiceAccount's identity"}.get(
            type(source), "workload identity"
        )
        raise ManagementError(
            reasons.MANAGEMENT_AUTH_FAILED, f"cannot use the {what}: {_without_secret(str(err), source)}"
        ) from None


def _without_secret(text: str, source: CredentialSource) -> str:
    if isinstance(source, ServicePrincipal) and source.client_secret:
        return text.replace(source.client_secret, "***")
    if isinstance(source, ServiceAccountLogin) and source.assertion:
        return text.replace(source.assertion, "***")
    return text
