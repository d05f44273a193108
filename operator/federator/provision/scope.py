"""Where Azure Resource Manager work (a mirror's members, a FailoverGroup's DNS zone) may sign in as the
operator, in the manner of Azure Service Operator's credential scopes: the operator's own identity (an
`ArmCredential.workloadIdentity`, the operator pod's federated token) is the global credential, allowed
only in the namespaces the installer lists and, if the installer lists any, only on those subscriptions.
Elsewhere a resource brings its own credential from its namespace (`servicePrincipalSecretRef`), or is
refused with `OperatorIdentityNotAllowed`.

Subscriptions narrow the namespaces, never widen them: an empty subscription list means "any subscription,
where the namespace is allowed", because the namespace list (empty by default) is what keeps tenants out;
a subscription list alone lends nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

from federator.settings import OperatorSettings, listed
from federator.validation.credential_scope import CredentialScope


@dataclass(frozen=True)
class ArmScope:
    namespaces: CredentialScope = field(default_factory=CredentialScope)
    """The namespaces allowed the operator's identity (and local mode, where nothing is refused)."""
    subscriptions: tuple[str, ...] = ()
    """Azure subscription IDs the operator's identity may act on; empty: any, where the namespace is
    allowed."""

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> ArmScope:
        """The installer's scope (`FEDERATOR_OPERATOR_IDENTITY_NAMESPACES`, `..._SUBSCRIPTIONS`)."""
        return cls(
            CredentialScope.from_settings(settings),
            tuple(s.lower() for s in listed(settings.operator_identity_subscriptions)),
        )

    @classmethod
    def unscoped(cls) -> ArmScope:
        """Local mode and tests against the emulator: the developer's own login, nothing refused."""
        return cls(CredentialScope(local=True))

    def refusal(self, namespace: str, subscription_id: str) -> str | None:
        """Why a resource in `namespace` may not act on `subscription_id` as the operator (None: it may)."""
        outside = self.namespaces.identity_refusal(namespace)
        if outside is not None:
            return outside
        if self.namespaces.local or not self.subscriptions or subscription_id.lower() in self.subscriptions:
            return None
        return (
            "the installer allows that only on the subscriptions listed in "
            f"FEDERATOR_OPERATOR_IDENTITY_SUBSCRIPTIONS ({', '.join(self.subscriptions)}), "
            f"not on {subscription_id}"
        )
