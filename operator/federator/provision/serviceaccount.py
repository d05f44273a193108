"""Signing in as a ServiceAccount of the resource's own namespace — workload identity without the operator's
identity. The operator asks the API server for the account's token with the audience Microsoft Entra's
token exchange expects (TokenRequest: `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`, for
10 minutes, the shortest the API server grants) and presents it as a client assertion for the identity
the account is annotated with (`azure.workload.identity/client-id` and `…/tenant-id`, the annotations the
workload identity webhook reads for a pod of that account). Entra accepts it only where that identity
has a federated credential for `system:serviceaccount:<ns>:<name>` and the cluster's issuer: the tenant's
own grant, in which the operator's identity plays no part.

The spec names the account in `ArmCredential.serviceAccount` (its client and tenant IDs, when written there,
stand in for missing annotations and must agree with present ones). A token is requested at each sign-in
(one provisioning pass) and kept in memory only; the operator needs `create` on `serviceaccounts/token` in
the namespace (the chart grants it, and nothing else on ServiceAccounts beyond `get`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from federator import reasons
from federator.kube.client import ApiError
from federator.kube.resources import SERVICE_ACCOUNTS
from federator.provision.credentials import ServiceAccountLogin
from federator.provision.errors import ManagementError
from federator.provision.secrets import SecretSource
from federator_contract.api.servicebusmirror import TOKEN_EXCHANGE_AUDIENCE

TOKEN_SECONDS = 600
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
TENANT_ID_ANNOTATION = "azure.workload.identity/tenant-id"


class TokenCreator(Protocol):
    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class ServiceAccountTokens(Protocol):
    """Where ServiceAccounts are read and their tokens requested: the operator's API client. Local mode's
    Secret sources have no `create`: there is no cluster to ask."""

    async def get(self, path: str) -> dict[str, Any] | None: ...
    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class NamespaceCredentials:
    """A pass's credential reads: Secrets and ServiceAccounts where the pass reads them (the short-lived
    cache), tokens from the API server itself (a TokenRequest is a write, never cached)."""

    reads: SecretSource
    tokens: TokenCreator

    async def get(self, path: str) -> dict[str, Any] | None:
        return await self.reads.get(path)

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.tokens.create(path, body)


def token_request(audience: str = TOKEN_EXCHANGE_AUDIENCE, seconds: int = TOKEN_SECONDS) -> dict[str, Any]:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"audiences": [audience], "expirationSeconds": seconds},
    }


async def service_account_login(
    kube: ServiceAccountTokens,
    namespace: str,
    name: str,
    client_id: str | None = None,
    *,
    tenant_id: str | None = None,
    audience: str = TOKEN_EXCHANGE_AUDIENCE,
) -> ServiceAccountLogin:
    """Who ServiceAccount `namespace/name` signs in as, with a fresh federated token for `audience`.
    `client_id` and `tenant_id`, when the spec names them, stand in for missing annotations and must agree
    with present ones. Raises ManagementError: ServiceAccountNotFound, WorkloadIdentityClientIdMissing /
    …Mismatch, ManagementAuthFailed (no tenant, or the API server refused the token: the message names the
    permission)."""
    where = f"ServiceAccount {namespace}/{name}"
    account = await kube.get(SERVICE_ACCOUNTS.path(namespace, name))
    if account is None:
        raise ManagementError(
            reasons.SERVICE_ACCOUNT_NOT_FOUND,
            f"{where} does not exist; create it and annotate it with {CLIENT_ID_ANNOTATION} and "
            f"{TENANT_ID_ANNOTATION}",
        )
    annotations = (account.get("metadata") or {}).get("annotations") or {}
    client = _agreed(where, "client ID", annotations.get(CLIENT_ID_ANNOTATION), client_id)
    if not client:
        raise ManagementError(
            reasons.WORKLOAD_IDENTITY_CLIENT_ID_MISSING,
            f"{where} has no annotation {CLIENT_ID_ANNOTATION}, and the spec names no clientId",
        )
    tenant = _agreed(where, "tenant ID", annotations.get(TENANT_ID_ANNOTATION), tenant_id)
    if not tenant:
        raise ManagementError(
            reasons.MANAGEMENT_AUTH_FAILED,
            f"{where} has no annotation {TENANT_ID_ANNOTATION}, and the spec names no tenantId",
        )
    return ServiceAccountLogin(
        namespace, name, tenant, client, await _token(kube, namespace, name, where, audience)
    )


def _agreed(where: str, what: str, annotated: Any, spec: str | None) -> str | None:
    """The spec's value or the account's annotation; refused when both are there and differ (a client ID
    as WorkloadIdentityClientIdMismatch, a tenant as ManagementAuthFailed)."""
    if spec is not None and annotated and spec.lower() != str(annotated).lower():
        mismatch = what == "client ID"
        raise ManagementError(
            reasons.WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH if mismatch else reasons.MANAGEMENT_AUTH_FAILED,
            f"{where} is annotated with {what} {annotated}, not {spec} as the spec says",
        )
    return spec or (str(annotated) if annotated else None)


async def _token(kube: ServiceAccountTokens, namespace: str, name: str, where: str, audience: str) -> str:
    try:
        answer = await kube.create(SERVICE_ACCOUNTS.path(namespace, name, "token"), token_request(audience))
    except ApiError as err:
        raise ManagementError(
            reasons.MANAGEMENT_AUTH_FAILED,
            f"cannot get a token of {where} (HTTP {err.status}: {err.message}); the operator needs "
            "`create` on serviceaccounts/token in this namespace",
            retryable=err.status >= 500,
        ) from None
    token = (answer.get("status") or {}).get("token")
    if not token:
        raise ManagementError(reasons.MANAGEMENT_AUTH_FAILED, f"the API server gave {where} no token")
    return str(token)
