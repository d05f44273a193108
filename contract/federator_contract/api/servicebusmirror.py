"""ServiceBusMirror: a Service Bus topology across namespaces (allActive, activePassive, spillover)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from federator_contract.api.base import (
    DNS_LABEL,
    ClientId,
    Condition,
    DnsLabel,
    EntityName,
    FedModel,
    LocalObjectReference,
    NamespaceConnection,
    ObjectStatus,
    PropertyName,
    QueueOrSubscription,
    ResourceName,
    StatusModel,
    WorkloadIdentity,
    cel,
    exactly_one,
    immutable,
    list_map,
)
from federator_contract.api.replicationtask import Delivery, Runtime

UUID = r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"


# Microsoft Entra's token exchange audience in Azure's public cloud: what workload identity federation
# expects unless the federated credential names another (a sovereign cloud's, or the installer's own).
TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"
ARM_CREDENTIAL_KINDS = ("servicePrincipalSecretRef", "serviceAccount", "workloadIdentity")


class ServiceAccountCredential(FedModel):
    """A ServiceAccount of the resource's own namespace, signed in as through Microsoft Entra workload
    identity federation, the way a pod of that account would be: Federator requests the account's token
    from the API server (TokenRequest, for `audience`) and presents it to Entra as a client assertion for
    `clientId` in `tenantId`. Entra accepts it only if that identity has a federated credential for
    `system:serviceaccount:<namespace>:<name>` and the cluster's issuer, so the resource acts with its own
    namespace's grant, never with the operator's identity. Another namespace's account is refused
    (`CrossNamespaceServiceAccount`)."""

    name: ResourceName
    """Name of the ServiceAccount, in the resource's namespace."""
    namespace: DnsLabel | None = None
    """Namespace of the ServiceAccount, if written at all: it must be the resource's own. Default: the
    resource's namespace."""
    client_id: ClientId | None = None
    """Client ID of the Microsoft Entra application or user-assigned managed identity to sign in as.
    Default: the account's `azure.workload.identity/client-id` annotation; when both are set they must be
    the same."""
    tenant_id: Annotated[str, StringConstraints(pattern=UUID)] | None = None
    """Microsoft Entra tenant ID of that identity. Default: the account's `azure.workload.identity/tenant-id`
    annotation."""
    audience: Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=r"^\S+$")] = (
        TOKEN_EXCHANGE_AUDIENCE
    )
    """Audience of the requested token: the one the identity's federated credential names. Default:
    `api://AzureADTokenExchange` (Azure's public cloud; Azure Government and Azure operated by 21Vianet
    use `api://AzureADTokenExchangeUSGov` and `api://AzureADTokenExchangeChina`)."""


class ArmCredential(FedModel):
    """Credential for Azure Resource Manager. Set exactly one of `servicePrincipalSecretRef`,
    `serviceAccount` or `workloadIdentity`."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one(*ARM_CREDENTIAL_KINDS)))

    service_principal_secret_ref: LocalObjectReference | None = None
    """A Secret of the resource's namespace with keys `tenantId`, `clientId` and `clientSecret`."""
    service_account: ServiceAccountCredential | None = None
    """A ServiceAccount of the resource's namespace, through workload identity federation (no secret at
    all). The operator needs `create` on `serviceaccounts/token` there (the chart grants it)."""
    workload_identity: WorkloadIdentity | None = None
    """The operator's own workload identity: allowed only in the namespaces (and subscriptions) the
    installer lists (chart values `credentials.operatorIdentityNamespaces`,
    `credentials.operatorIdentitySubscriptions`), refused elsewhere (`OperatorIdentityNotAllowed`).
    `fullyQualifiedNamespace` names the namespace it is granted on."""

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> ArmCredential:
        chosen = [self.service_principal_secret_ref, self.service_account, self.workload_identity]
        if sum(kind is not None for kind in chosen) != 1:
            raise ValueError(exactly_one(*ARM_CREDENTIAL_KINDS)[1])
        return self


class ArmManagement(FedModel):
    """Provision through Azure Resource Manager (`azure-mgmt-servicebus`)."""

    subscription_id: Annotated[str, StringConstraints(pattern=UUID)]
    """Azure subscription ID of the namespace."""
    resource_group: Annotated[str, StringConstraints(min_length=1, max_length=90, pattern=r"^[-\w._()]+$")]
    """Resource group of the namespace."""
    namespace_name: Annotated[
        str, StringConstraints(min_length=6, max_length=50, pattern=r"^[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]$")
    ]
    """Name of the Service Bus namespace."""
    credential: ArmCredential
    """Who Federator is in Azure Resource Manager."""


class DataPlaneManagement(FedModel):
    """Provision through `ServiceBusAdministrationClient` with the member's connection string, which must
    carry Manage rights. For teams without Azure Resource Manager access."""


class MemberManagement(FedModel):
    """How Federator creates subscriptions and rules on a member. Set exactly one of `arm` or `dataPlane`."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("arm", "dataPlane")))

    arm: ArmManagement | None = None
    """Through Azure Resource Manager."""
    data_plane: DataPlaneManagement | None = None
    """Through the Service Bus administration API with a connection string."""


class MirrorMember(FedModel):
    """One Service Bus namespace of the mirror."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "has(self.management) || has(self.connection.emulator)",
                "management is required unless the member is an emulator namespace",
            ),
            (
                "!has(self.management) || !has(self.management.dataPlane) || has(self.connection.secretRef)"
                " || has(self.connection.emulator)",
                "management.dataPlane needs a connection string: set connection.secretRef",
            ),
        )
    )

    name: Annotated[str, StringConstraints(min_length=1, max_length=12, pattern=DNS_LABEL)]
    """Name of the member, unique in the mirror, at most 12 characters: generated subscriptions and
    ReplicationTasks are named after members."""
    connection: NamespaceConnection
    """How replication tasks reach the namespace."""
    management: MemberManagement | None = None
    """How subscriptions and rules are provisioned. Not needed for emulator namespaces."""


class ActivePassive(FedModel):
    """Settings of the activePassive pattern."""

    primary_member: DnsLabel
    """Name of the member whose topic is replicated to every other member."""
    time_to_live_seconds: Annotated[int, Field(ge=1, le=1_209_600)]
    """TimeToLive set on replicated messages (`SET sys.TimeToLive` in the rule action): the failover
    window, e.g. twice the time to switch consumers. Between 1 second and 14 days."""


class Spillover(FedModel):
    """Settings of the spillover pattern (exactly two members)."""

    entities: Annotated[list[QueueOrSubscription], Field(min_length=1, max_length=64)]
    """Queues or subscriptions, present under the same names on both members, whose dead-letter queues
    spill over into the peer's queue (or topic)."""
    auxiliary_queue_name: EntityName = "spillover-aux"
    """Queue, on each member, receiving messages that dead-letter again after one spill, instead of
    bouncing back. Default: `spillover-aux`."""
    marker_property: PropertyName = "repl-spilled"
    """Property marking a message that was spilled once. Default: `repl-spilled`."""


class TaskTemplate(FedModel):
    """Settings copied into every generated ReplicationTask."""

    runtime: Runtime = Runtime()
    """Spark settings. The generated tasks share one Spark application: the ReplicationApplication named in
    `applicationRef`, or else one the mirror owns, named after it, which runs with the launcher, image,
    service account, resources and Spark settings given here."""
    delivery: Delivery = Delivery()
    """Delivery guarantee."""


class ServiceBusMirrorSpec(FedModel):
    """Desired state of a ServiceBusMirror."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "self.pattern == 'spillover' || has(self.topicName)",
                "topicName is required for allActive and activePassive",
                ".topicName",
            ),
            (
                "has(self.activePassive) == (self.pattern == 'activePassive')",
                "activePassive settings (primaryMember, timeToLiveSeconds) are required for pattern"
                " activePassive, and only for it",
                ".activePassive",
            ),
            (
                "has(self.spillover) == (self.pattern == 'spillover')",
                "spillover settings are required for pattern spillover, and only for it",
                ".spillover",
            ),
            (
                "self.pattern != 'spillover' || self.members.size() == 2",
                "spillover pairs exactly two members",
                ".members",
            ),
            (
                "!has(self.activePassive)"
                " || self.members.exists(m, m.name == self.activePassive.primaryMember)",
                "activePassive.primaryMember must name a member",
                ".activePassive.primaryMember",
            ),
        )
    )

    pattern: Annotated[
        Literal["allActive", "activePassive", "spillover"], Field(json_schema_extra=immutable("pattern"))
    ]
    """`allActive` (every topic gets every message, none bounces), `activePassive` (primary → secondaries,
    with a TimeToLive) or `spillover` (dead-letter queues re-enqueued in the paired namespace). Immutable."""
    members: Annotated[
        list[MirrorMember], Field(min_length=2, max_length=8, json_schema_extra=list_map("name"))
    ]
    """The namespaces of the mirror."""
    topic_name: EntityName | None = None
    """allActive and activePassive: the topic, present under this name on every member."""
    replication_property: PropertyName = "replication"
    """User property that marks replicated messages (`<prop> IS NULL` filter, `SET <prop> = 1` action).
    Default: `replication`."""
    active_passive: ActivePassive | None = None
    """Settings for pattern activePassive."""
    spillover: Spillover | None = None
    """Settings for pattern spillover."""
    task_template: TaskTemplate = TaskTemplate()
    """Settings of the generated ReplicationTasks."""


class MemberStatus(StatusModel):
    """Provisioning state of one member."""

    name: str
    """Member name."""
    state: Literal["Pending", "Provisioned", "Failed"]
    """Provisioning state."""
    reason: str = ""
    """CamelCase reason when not Provisioned."""
    message: str = ""
    """Details for a human."""
    entities: Annotated[list[Annotated[str, StringConstraints(max_length=600)]], Field(max_length=64)] = []
    """Entities Federator created on this member and owns (their user metadata carries the mirror's
    marker), e.g. `topics/orders/subscriptions/repl-b`, `queues/spillover-aux`. Drift is repaired on these
    and deleting the mirror deletes them; nothing else on the namespace is ever changed."""


class PairStatus(StatusModel):
    """State of one replication pair."""

    source: str
    """Source member."""
    target: str
    """Target member."""
    task_name: str
    """Generated ReplicationTask."""
    ready: Literal["True", "False", "Unknown"] = "Unknown"
    """The task's Ready condition."""
    reason: str = ""
    """The task's Ready reason."""


class ServiceBusMirrorStatus(ObjectStatus):
    """Observed state of a ServiceBusMirror. Written by the operator only."""

    conditions: Annotated[list[Condition], Field(max_length=16, json_schema_extra=list_map("type"))] = []
    """`Ready`, `Reconciling`, `Stalled`, `RulesProvisioned`, `TasksReady`."""
    members: Annotated[list[MemberStatus], Field(max_length=8)] = []
    """Per-member provisioning state."""
    pairs: Annotated[list[PairStatus], Field(max_length=64)] = []
    """Per-pair task state."""
