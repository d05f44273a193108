"""Where Azure Resource Manager work (a mirror's members, a FailoverGroup's DNS zone) may sign in as the
operator, in the manner of Azure Service Operator's credential scopes: the operator's own identity (an
`ArmCredential.workloadIdentity`, the operator pod's federated token) is the global credential, allowed
only in the namespaces the installer lists and, if the installer lists any, only on those subscriptions.
Elsewhere a resource brings its own credential from its namespace (`servicePrincipalSecretRef`, or
`serviceAccount`: a ServiceAccount's federated token), or is refused with `OperatorIdentityNotAllowed`.
A `serviceAccount` must be one the installer lists (any by default), or is refused with
`CredentialServiceAccountNotAllowed`.

Subscriptions narrow the namespaces, never widen them: an empty subscription list means "any subscription,
where the namespace is allowed", because the namespace list (empty by default) is what keeps tenants out;
a subscription list alone lends nothing. The rule itself is `CredentialScope.arm_refusal`, which
`federator validate` warns with."""

from __future__ import annotations

from dataclasses import dataclass, field

from federator.settings import OperatorSettings
from federator.validation.credential_scope import CredentialScope


@dataclass(frozen=True)
class ArmScope:
    namespaces: CredentialScope = field(default_factory=CredentialScope)
    """The namespaces and subscriptions allowed the operator's identity (and local mode, where nothing is
    refused)."""

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> ArmScope:
        """The installer's scope (`FEDERATOR_OPERATOR_IDENTITY_NAMESPACES`, `..._SUBSCRIPTIONS`)."""
        return cls(CredentialScope.from_settings(settings))

    @classmethod
    def unscoped(cls) -> ArmScope:
        """Local mode and tests against the emulator: the developer's own login, nothing refused."""
        return cls(CredentialScope(local=True))

    @property
    def subscriptions(self) -> tuple[str, ...]:
        """Azure subscription IDs the operator's identity may act on; empty: any, where the namespace is
        allowed."""
        return self.namespaces.identity_subscriptions

    def refusal(self, namespace: str, subscription_id: str) -> str | None:
        """Why a resource in `namespace` may not act on `subscription_id` as the operator (None: it may)."""
        return self.namespaces.arm_refusal(namespace, subscription_id)

    def account_refusal(self, namespace: str, name: str) -> str | None:
        """Why a resource in `namespace` may not sign in as its ServiceAccount `name` (None: it may)."""
        return self.namespaces.account_refusal(namespace, name)
