"""Signing in to Azure Resource Manager for a resource, within the installer's credential scope: its own
credential from its own namespace always — a service principal's Secret, or a ServiceAccount's federated
token (TokenRequest: provision/serviceaccount.py) — and the operator's identity (`workloadIdentity`) only
where the scope allows (provision/scope.py). For every controller that talks to ARM: a mirror's members, a
FailoverGroup's DNS zone."""

from __future__ import annotations

from azure.core.credentials_async import AsyncTokenCredential

from federator import reasons
from federator.provision.credentials import CredentialSource, build_credential, credential_source
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError
from federator.provision.scope import ArmScope
from federator.provision.secrets import SecretSource
from federator.provision.serviceaccount import ServiceAccountTokens, service_account_login
from federator.validation.credential_scope import BRING_YOUR_OWN_ARM
from federator_contract.api.servicebusmirror import ArmCredential, ServiceAccountCredential


async def arm_login(
    kube: SecretSource,
    namespace: str,
    credential: ArmCredential,
    subscription_id: str,
    env: ManagementEnvironment,
    field: str,
) -> AsyncTokenCredential:
    """The token credential for `credential` of a resource in `namespace` acting on `subscription_id`;
    `field` names the credential as users write it (e.g. `member west: management.arm.credential`).
    `kube` must also request tokens (`ServiceAccountTokens`) for a `serviceAccount`. Raises
    ManagementError: OperatorIdentityNotAllowed, CrossNamespaceServiceAccount and
    CredentialServiceAccountNotAllowed (refused before anything is read or signed in), SecretNotFound /
    SecretKeyNotFound, ServiceAccountNotFound, ManagementAuthFailed."""
    if credential.workload_identity is not None:
        refusal = env.scope.refusal(namespace, subscription_id)
        if refusal is not None:
            raise ManagementError(
                reasons.OPERATOR_IDENTITY_NOT_ALLOWED,
                f"{field}.workloadIdentity signs in to Azure Resource Manager as the operator; {refusal}: "
                f"{BRING_YOUR_OWN_ARM}",
            )
    source: CredentialSource
    if (account := credential.service_account) is not None:
        source = await _service_account(kube, namespace, account, env.scope, f"{field}.serviceAccount")
    else:
        source = await credential_source(kube, namespace, credential)
    return build_credential(source, env.credential_factory)


async def _service_account(
    kube: SecretSource, namespace: str, account: ServiceAccountCredential, scope: ArmScope, field: str
) -> CredentialSource:
    """The federated login of an account of `namespace` — never of another namespace, whose identity's
    grant is not this resource's to use, nor of an account the installer does not list."""
    if account.namespace is not None and account.namespace != namespace:
        raise ManagementError(
            reasons.CROSS_NAMESPACE_SERVICE_ACCOUNT,
            f"{field}.namespace is {account.namespace!r}: Federator signs in only as a ServiceAccount of the "
            f"resource's own namespace ({namespace!r}); drop namespace and name an account of {namespace!r}",
        )
    if (refusal := scope.account_refusal(namespace, account.name)) is not None:
        raise ManagementError(
            reasons.CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED,
            f"{field}.name is {account.name!r}: {refusal}; name an account the installer lists",
        )
    if not isinstance(kube, ServiceAccountTokens):
        raise ManagementError(
            reasons.MANAGEMENT_AUTH_FAILED,
            f"{field}: a ServiceAccount's token comes from a cluster's TokenRequest API, which is not at hand"
            " here (local mode has no cluster): use servicePrincipalSecretRef",
        )
    try:
        return await service_account_login(
            kube,
            namespace,
            account.name,
            account.client_id,
            tenant_id=account.tenant_id,
            audience=account.audience,
        )
    except ManagementError as err:
        raise ManagementError(err.reason, f"{field}: {err.message}", retryable=err.retryable) from None
