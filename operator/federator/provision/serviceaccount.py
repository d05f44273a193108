"""Signing in as a ServiceAccount of the resource's own namespace — workload identity without the operator's
identity. The operator asks the API server for the account's token with the audience Microsoft Entra's
token exchange expects (TokenRequest: `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`, for
10 minutes, the shortest the API server grants) and presents it as a client assertion for the identity
the account is annotated with (`azure.workload.identity/client-id` and `…/tenant-id`, the annotations the
workload identity webhook reads for a pod of that account). Entra accepts it only where that identity
has a federated credential for `system:serviceaccount:<ns>:<name>` and the cluster's issuer: the tenant's
own grant, in which the operator's identity plays no part.

A token is requested at each sign-in (one provisioning pass) and kept in memory only; the operator needs
`create` on `serviceaccounts/token` in the namespace."""

from __future__ import annotations

from typing import Any, Protocol

from federator import reasons
from federator.kube.client import ApiError
from federator.kube.resources import SERVICE_ACCOUNTS
from federator.provision.credentials import ServiceAccountLogin
from federator.provision.errors import ManagementError

TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"
TOKEN_SECONDS = 600
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
TENANT_ID_ANNOTATION = "azure.workload.identity/tenant-id"


class ServiceAccountTokens(Protocol):
    """Where ServiceAccounts are read and their tokens requested: the operator's API client."""

    async def get(self, path: str) -> dict[str, Any] | None: ...
    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


def token_request(seconds: int = TOKEN_SECONDS) -> dict[str, Any]:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"audiences": [TOKEN_EXCHANGE_AUDIENCE], "expirationSeconds": seconds},
    }


async def service_account_login(
    kube: ServiceAccountTokens, namespace: str, name: str, client_id: str | None = None
) -> ServiceAccountLogin:
    """Who ServiceAccount `namespace/name` signs in as, with a fresh federated token. `client_id`, when the
    spec names one, must be the account's. Raises ManagementError: ServiceAccountNotFound,
    WorkloadIdentityClientIdMissing / …Mismatch, ManagementAuthFailed (no tenant annotation, or the API
    server refused the token: the message names the permission)."""
    where = f"ServiceAccount {namespace}/{name}"
    account = await kube.get(SERVICE_ACCOUNTS.path(namespace, name))
    if account is None:
        raise ManagementError(
            reasons.SERVICE_ACCOUNT_NOT_FOUND,
            f"{where} does not exist; create it and annotate it with {CLIENT_ID_ANNOTATION} and "
            f"{TENANT_ID_ANNOTATION}",
        )
    annotations = (account.get("metadata") or {}).get("annotations") or {}
    annotated, tenant = annotations.get(CLIENT_ID_ANNOTATION), annotations.get(TENANT_ID_ANNOTATION)
    if not annotated:
        raise ManagementError(
            reasons.WORKLOAD_IDENTITY_CLIENT_ID_MISSING, f"{where} has no annotation {CLIENT_ID_ANNOTATION}"
        )
    if client_id is not None and client_id.lower() != str(annotated).lower():
        raise ManagementError(
            reasons.WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH,
            f"{where} is annotated with client ID {annotated}, not {client_id} as the spec says",
        )
    if not tenant:
        raise ManagementError(
            reasons.MANAGEMENT_AUTH_FAILED, f"{where} has no annotation {TENANT_ID_ANNOTATION}"
        )
    return ServiceAccountLogin(
        namespace, name, str(tenant), str(annotated), await _token(kube, namespace, name, where)
    )


async def _token(kube: ServiceAccountTokens, namespace: str, name: str, where: str) -> str:
    try:
        answer = await kube.create(SERVICE_ACCOUNTS.path(namespace, name, "token"), token_request())
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
