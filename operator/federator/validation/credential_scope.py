"""Credential scoping, in the manner of Azure Service Operator: where a bearer token may be sent, and where
the operator may sign in with its own Azure identity.

- **Endpoint hosts.** A `workloadIdentity` connection makes its client (the operator's probes, the Spark
  pods) present an Entra ID token to the host it names. A host outside Azure would collect that token, so
  hosts must end in one of Azure's DNS suffixes — the public cloud's legacy and partitioned names, Azure
  operated by 21Vianet (China) and Azure Government — or in a suffix the installer adds (an emulator's
  Service, a private DNS zone). Refused: `EndpointHostNotAllowed`.
- **The operator's identity.** FailoverGroup probes and task source probes sign in with the operator pod's
  credential when a connection says `workloadIdentity`. The installer lists the namespaces that may do so;
  elsewhere a connection carries its own credential from its own namespace (`secretRef`). Refused:
  `OperatorIdentityNotAllowed`. Azure Resource Manager work (a mirror member's and a DNS zone's
  `credential.workloadIdentity`) likewise, and only on the subscriptions the installer lists, if it lists
  any (provision/scope.py); there a resource brings a Secret or a ServiceAccount of its namespace.
- **ServiceAccounts as Azure credentials.** A mirror member's or DNS zone's `credential.serviceAccount` has
  the operator request that account's token and sign in as its Entra identity. The installer lists the
  accounts a resource may name (`name` or `namespace/name`, globs; any by default): a multi-tenant install
  lists those meant for Federator's ARM work, so that a tenant cannot have the operator sign in as another
  workload's account of its namespace. Refused: `CredentialServiceAccountNotAllowed`.

The operator enforces each (Stalled, or the probe's condition, with the reason); `federator validate`
reports a host as a problem and the operator's identity as a warning (it depends on the namespace the
manifest is applied in), naming the chart value that would allow it. Local mode (`federator run`) signs
in as the developer and reaches its emulator: neither rule applies there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from federator.reasons import (
    CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED,
    CROSS_NAMESPACE_SERVICE_ACCOUNT,
    ENDPOINT_HOST_NOT_ALLOWED,
    OPERATOR_IDENTITY_NOT_ALLOWED,
)
from federator.settings import OperatorSettings, listed
from federator_contract.api.base import WorkloadIdentity
from federator_contract.api.connections import Role, Spec, connections
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.api.servicebusmirror import (
    ArmCredential,
    ServiceAccountCredential,
    ServiceBusMirrorSpec,
)
from federator_contract.api.translation import BlobWorkloadIdentity

# Event Hubs and Service Bus namespaces: the public cloud (legacy `servicebus.windows.net`, and the
# partitioned DNS zones of new namespaces), Azure operated by 21Vianet, Azure Government.
AZURE_MESSAGING_SUFFIXES: tuple[str, ...] = (
    "servicebus.windows.net",
    "servicebus.azure.net",
    "eventhubs.azure.net",
    "servicebus.chinacloudapi.cn",
    "servicebus.usgovcloudapi.net",
)
# Blob Storage accounts (checkpoint stores), the same clouds.
AZURE_BLOB_SUFFIXES: tuple[str, ...] = (
    "blob.core.windows.net",
    "blob.storage.azure.net",
    "blob.core.chinacloudapi.cn",
    "blob.core.usgovcloudapi.net",
)


# The connections the operator itself signs in to (the rest are used by the Spark pods, as themselves).
_PROBED: dict[type[Spec], tuple[Role, ...]] = {
    FailoverGroupSpec: ("member",),
    ReplicationTaskSpec: ("source",),
}


# What a refusal of the operator's identity means for each (the remedy: a Secret of the namespace).
BRING_YOUR_OWN = "use secretRef with a Secret of this namespace"
_CONSEQUENCE: dict[Role, str] = {
    "member": f"the group is Stalled (OperatorIdentityNotAllowed); {BRING_YOUR_OWN}",
    "source": (
        "the source is not probed (SourceReachable Unknown, OperatorIdentityNotAllowed); the task's pods "
        f"still sign in as their own ServiceAccount. To have it probed, {BRING_YOUR_OWN}"
    ),
}
BRING_YOUR_OWN_ARM = (
    "name a ServiceAccount of this namespace in serviceAccount, or use servicePrincipalSecretRef with a"
    " Secret of this namespace"
)
NAMESPACES_VALUE = "chart value credentials.operatorIdentityNamespaces"
SUBSCRIPTIONS_VALUE = "chart value credentials.operatorIdentitySubscriptions"
ACCOUNTS_VALUE = "chart value credentials.serviceAccounts"
ACCOUNTS_VARIABLE = "FEDERATOR_ALLOWED_CREDENTIAL_SERVICE_ACCOUNTS"


@functools.cache
def operator_scope() -> CredentialScope:
    """The scope the operator enforces: its settings from this environment, as in its pod."""
    return CredentialScope.from_settings(OperatorSettings.from_env())


@dataclass(frozen=True)
class ScopeFinding:
    field_path: str
    """The field as users write it, e.g. `spec.members[0].connection.workloadIdentity`."""
    reason: str
    message: str


@dataclass(frozen=True)
class CredentialScope:
    extra_suffixes: tuple[str, ...] = ()
    """The installer's host suffixes, accepted for every kind of endpoint."""
    identity_namespaces: tuple[str, ...] = ()
    """Namespaces (globs) whose resources may use the operator's own identity."""
    identity_subscriptions: tuple[str, ...] = ()
    """Azure subscriptions (lower case) on which ARM work may use it; empty: any, where the namespace may."""
    service_accounts: tuple[str, ...] = ("*",)
    """ServiceAccounts a resource may name as its ARM credential: `name` (in any namespace) or
    `namespace/name`, each part a glob."""
    local: bool = False
    """Local mode: the developer's own identity and emulators; nothing is refused."""

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> CredentialScope:
        suffixes = tuple(s.lstrip(".").lower() for s in listed(settings.allowed_endpoint_suffixes))
        return cls(
            extra_suffixes=suffixes,
            identity_namespaces=tuple(listed(settings.operator_identity_namespaces)),
            identity_subscriptions=tuple(s.lower() for s in listed(settings.operator_identity_subscriptions)),
            service_accounts=tuple(listed(settings.allowed_credential_service_accounts)),
        )

    def host_findings(self, spec: Spec) -> list[ScopeFinding]:
        """Every `workloadIdentity` host of ``spec`` that a token must not be sent to."""
        return list(self._hosts(spec))

    def identity_refusal(self, namespace: str | None) -> str | None:
        """Why a connection in ``namespace`` (None: not known yet) may not sign in as the operator (None:
        it may)."""
        if self.local or any(fnmatchcase(namespace or "", allowed) for allowed in self.identity_namespaces):
            return None
        allowed = ", ".join(self.identity_namespaces) or "none"
        where = f"not in {namespace!r}" if namespace else "and the manifest names no namespace"
        return (
            f"the installer allows that only in the namespaces listed in "
            f"FEDERATOR_OPERATOR_IDENTITY_NAMESPACES ({allowed}), {where} ({NAMESPACES_VALUE})"
        )

    def arm_refusal(self, namespace: str | None, subscription_id: str) -> str | None:
        """Why ARM work of a resource in ``namespace`` may not act on ``subscription_id`` as the operator
        (None: it may). Subscriptions narrow the namespaces, never widen them."""
        outside = self.identity_refusal(namespace)
        if outside is not None:
            return outside
        if (
            self.local
            or not self.identity_subscriptions
            or subscription_id.lower() in self.identity_subscriptions
        ):
            return None
        return (
            "the installer allows that only on the subscriptions listed in "
            f"FEDERATOR_OPERATOR_IDENTITY_SUBSCRIPTIONS ({', '.join(self.identity_subscriptions)}), "
            f"not on {subscription_id} ({SUBSCRIPTIONS_VALUE})"
        )

    def account_refusal(self, namespace: str | None, name: str) -> str | None:
        """Why a resource in ``namespace`` (None: not known yet) may not name ServiceAccount ``name`` as its
        Azure credential (None: it may)."""
        if self.local or any(_account_matches(entry, namespace, name) for entry in self.service_accounts):
            return None
        account = f"{namespace}/{name}" if namespace else f"{name!r} (the manifest names no namespace)"
        return (
            f"the installer allows only the ServiceAccounts listed in {ACCOUNTS_VARIABLE} "
            f"({', '.join(self.service_accounts) or 'none'}), not {account} ({ACCOUNTS_VALUE})"
        )

    def account_findings(self, spec: Spec, namespace: str | None) -> list[ScopeFinding]:
        """The ARM credentials of ``spec`` naming a ServiceAccount the installer's list does not allow in
        ``namespace``: each such resource is Stalled."""

        def why(account: ServiceAccountCredential, stalled: str) -> str | None:
            if (refusal := self.account_refusal(namespace, account.name)) is None:
                return None
            return (
                f"Federator would sign in to Azure as this ServiceAccount, and {refusal}: {stalled} "
                "(CredentialServiceAccountNotAllowed); name an account the installer lists"
            )

        return _account_findings(spec, "name", CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED, why)

    def arm_findings(self, spec: Spec, namespace: str | None) -> list[ScopeFinding]:
        """The ARM credentials of ``spec`` (a mirror's members, a group's DNS zone) that would sign in as
        the operator where the installer does not allow it: each such resource is Stalled."""
        return [
            ScopeFinding(
                f"{path}.workloadIdentity",
                OPERATOR_IDENTITY_NOT_ALLOWED,
                f"Azure Resource Manager work would sign in as the operator, and {refusal}: {stalled} "
                f"(OperatorIdentityNotAllowed); {BRING_YOUR_OWN_ARM}",
            )
            for path, credential, subscription_id, stalled in arm_credentials(spec)
            if credential.workload_identity is not None
            and (refusal := self.arm_refusal(namespace, subscription_id)) is not None
        ]

    def identity_findings(self, spec: Spec, namespace: str | None) -> list[ScopeFinding]:
        """The connections of ``spec`` the operator would sign in to with its own identity, where the
        installer does not allow it: a FailoverGroup's members (probes), a task's source (its probe)."""
        refusal = self.identity_refusal(namespace)
        if refusal is None:
            return []
        return [
            ScopeFinding(
                f"{site.field_path}.workloadIdentity",
                OPERATOR_IDENTITY_NOT_ALLOWED,
                f"the operator would probe it with its own Azure identity, and {refusal}: "
                f"{_CONSEQUENCE[site.role]}",
            )
            for site in connections(spec)
            if site.role in _PROBED.get(type(spec), ())
            and isinstance(site.connection.workload_identity, WorkloadIdentity)
        ]

    def host_refusal(self, identity: WorkloadIdentity | BlobWorkloadIdentity) -> str | None:
        """Why ``identity``'s token must not be sent to the host it names (None: it may)."""
        if isinstance(identity, WorkloadIdentity):
            host = identity.fully_qualified_namespace.rsplit(":", 1)[0]
            suffixes = (*AZURE_MESSAGING_SUFFIXES, *self.extra_suffixes)
        else:
            host = urlsplit(identity.blob_endpoint).hostname or ""
            suffixes = (*AZURE_BLOB_SUFFIXES, *self.extra_suffixes)
        if self.local or _under(host.lower(), suffixes):
            return None
        return (
            f"{host!r} is not an Azure endpoint: a workload identity token is sent only to hosts under "
            f"{', '.join(suffixes)} (the installer adds suffixes with FEDERATOR_ALLOWED_ENDPOINT_SUFFIXES)"
        )

    def _hosts(self, spec: Spec) -> Iterator[ScopeFinding]:
        for site in connections(spec):
            identity = site.connection.workload_identity
            if identity is None or (refusal := self.host_refusal(identity)) is None:
                continue
            field = "fullyQualifiedNamespace" if isinstance(identity, WorkloadIdentity) else "blobEndpoint"
            yield ScopeFinding(
                f"{site.field_path}.workloadIdentity.{field}", ENDPOINT_HOST_NOT_ALLOWED, refusal
            )


def cross_namespace_accounts(spec: Spec, namespace: str | None) -> list[ScopeFinding]:
    """The ARM credentials of ``spec`` naming a ServiceAccount of another namespace than ``namespace``
    (None: the manifest names none, so any namespace written is a guess): the operator refuses each."""
    where = f"the resource's ({namespace!r})" if namespace else "the one the manifest is applied in"

    def why(account: ServiceAccountCredential, stalled: str) -> str | None:
        if account.namespace is None or account.namespace == namespace:
            return None
        return (
            f"Federator signs in only as a ServiceAccount of the resource's own namespace, and "
            f"{account.namespace!r} is not {where}: {stalled} (CrossNamespaceServiceAccount); drop namespace"
        )

    return _account_findings(spec, "namespace", CROSS_NAMESPACE_SERVICE_ACCOUNT, why)


def _account_findings(
    spec: Spec, field: str, reason: str, why: Callable[[ServiceAccountCredential, str], str | None]
) -> list[ScopeFinding]:
    """A finding at `<credential>.serviceAccount.<field>` for each ARM credential of ``spec`` whose
    ServiceAccount ``why`` refuses (given the account and what a refusal stalls), with its words."""
    return [
        ScopeFinding(f"{path}.serviceAccount.{field}", reason, message)
        for path, credential, _, stalled in arm_credentials(spec)
        if (account := credential.service_account) is not None
        and (message := why(account, stalled)) is not None
    ]


def arm_credentials(spec: Spec) -> Iterator[tuple[str, ArmCredential, str, str]]:
    """(field path, credential, subscription ID, what a refusal stalls) of each ARM credential in ``spec``."""
    if isinstance(spec, ServiceBusMirrorSpec):
        for i, member in enumerate(spec.members):
            arm = member.management.arm if member.management is not None else None
            if arm is not None:
                path = f"spec.members[{i}].management.arm.credential"
                yield path, arm.credential, arm.subscription_id, f"member {member.name} is not provisioned"
    elif isinstance(spec, FailoverGroupSpec) and spec.publishing.dns is not None:
        zone = spec.publishing.dns.zone
        path = "spec.publishing.dns.zone.credential"
        yield path, zone.credential, zone.subscription_id, "no DNS record is written"


def _account_matches(entry: str, namespace: str | None, name: str) -> bool:
    """Whether list entry ``name`` or ``namespace/name`` (globs) allows account ``name`` of ``namespace``
    (None: unknown, so only an entry for any namespace can)."""
    if "/" not in entry:
        return fnmatchcase(name, entry)
    namespaces, names = entry.split("/", 1)
    return namespace is not None and fnmatchcase(namespace, namespaces) and fnmatchcase(name, names)


def _under(host: str, suffixes: tuple[str, ...]) -> bool:
    return any(host == suffix or host.endswith(f".{suffix}") for suffix in suffixes)
