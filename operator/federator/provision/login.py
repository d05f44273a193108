"""Signing in to Azure Resource Manager for a resource, within the installer's credential scope: its own
credential from its own namespace (a service principal's Secret) always; the operator's identity
(`workloadIdentity`) only where the scope allows (provision/scope.py). For every controller that talks to
ARM: a mirror's members, a FailoverGroup's DNS zone."""

from __future__ import annotations

from azure.core.credentials_async import AsyncTokenCredential

from federator import reasons
from federator.provision.credentials import build_credential, credential_source
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError
from federator.provision.secrets import SecretSource
from federator_contract.api.servicebusmirror import ArmCredential

BRING_YOUR_OWN_ARM = "use servicePrincipalSecretRef with a Secret of this namespace"


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
    Raises ManagementError: OperatorIdentityNotAllowed (refused before anything is read or signed in),
    SecretNotFound / SecretKeyNotFound, ManagementAuthFailed."""
    if credential.workload_identity is not None:
        refusal = env.scope.refusal(namespace, subscription_id)
        if refusal is not None:
            raise ManagementError(
                reasons.OPERATOR_IDENTITY_NOT_ALLOWED,
                f"{field}.workloadIdentity signs in to Azure Resource Manager as the operator; {refusal}: "
                f"{BRING_YOUR_OWN_ARM}",
            )
    return build_credential(await credential_source(kube, namespace, credential), env.credential_factory)
