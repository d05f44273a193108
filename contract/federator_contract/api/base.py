"""Building blocks shared by the kinds: the model base, CEL rules, conditions, references.

Fields are snake_case in Python and camelCase on the wire (aliases). Every field's docstring is
its description in the generated CRD, which is what `kubectl explain` shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

GROUP = "federator.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# Kubernetes object-name shapes, bounded so CEL cost estimation stays within the API server's budget.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=DNS_LABEL)]
ResourceName = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
]
# A message property name as Service Bus and Event Hubs accept it in application properties.
PropertyName = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
]
# Event hub, queue, topic and subscription names (the strictest common subset of Azure's rules).
EntityName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=260, pattern=r"^[A-Za-z0-9]([A-Za-z0-9._\-/~]*[A-Za-z0-9])?$"),
]
SubscriptionName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=50, pattern=r"^[A-Za-z0-9$]([A-Za-z0-9._\-]*[A-Za-z0-9])?$"),
]


def _parse_condition(text: str) -> str:
    # Imported here: the grammar is a sibling package the models depend on only for this check.
    from federator_contract.sql import Dialect, SqlSyntaxError, parse_filter

    try:
        parse_filter(text, Dialect.FEDERATOR)
    except SqlSyntaxError as err:
        raise ValueError(f"invalid SQL condition: {err}") from None
    return text


# A predicate in Service Bus SQL syntax (plus `body.<path>`), parsed by `federator_contract.sql` when the
# model is validated: offline by `federator validate`, in the cluster by the operator (Stalled otherwise).
SqlExpression = Annotated[
    str, StringConstraints(min_length=1, max_length=4096), AfterValidator(_parse_condition)
]
# Where a value is read from an event: a user property, `sys.<SystemProperty>` or `body.<path>`.
ValueReference = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=256,
        pattern=r"^(sys\.[A-Za-z]+|body(\.[A-Za-z0-9_$\-]+)+|[A-Za-z_][A-Za-z0-9_.\-]*)$",
    ),
]


def cel(*rules: tuple[str, str] | tuple[str, str, str]) -> dict[str, Any]:
    """`json_schema_extra` carrying CEL rules: (rule, message) or (rule, message, fieldPath)."""
    out = []
    for rule in rules:
        entry = {"rule": rule[0], "message": rule[1]}
        if len(rule) == 3:
            entry["fieldPath"] = rule[2]
        out.append(entry)
    return {"x-kubernetes-validations": out}


def exactly_one(*fields: str) -> tuple[str, str]:
    """A CEL rule requiring exactly one of the given optional fields."""
    checks = ", ".join(f"has(self.{f})" for f in fields)
    return f"[{checks}].filter(x, x).size() == 1", f"exactly one of {', '.join(fields)} must be set"


def immutable(what: str) -> dict[str, Any]:
    """A transition rule that refuses changes to a field once the object exists."""
    return cel(("self == oldSelf", f"{what} is immutable"))


def list_map(*keys: str) -> dict[str, Any]:
    """Marks a list as a map keyed by `keys` (the API server rejects duplicate keys)."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


class FedModel(BaseModel):
    """Base of every API object: camelCase on the wire, unknown fields refused, immutable in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )


class StatusModel(FedModel):
    """Base of the status models: as `FedModel`, but a field it does not know is kept, not refused. A
    status a newer operator wrote still parses, and what this one writes back carries those fields
    unchanged (a spec is refused instead: a field Federator would ignore is a mistake there)."""

    model_config = ConfigDict(extra="allow")


class LocalObjectReference(FedModel):
    """A reference to an object in the same namespace."""

    name: DnsLabel
    """Name of the referenced object."""


class SecretKeySelector(FedModel):
    """A key of a Secret in the resource's namespace. Only the reference is stored; Federator reads the
    value when it needs it and never copies it into specs, status, Events, logs or metrics."""

    name: ResourceName
    """Name of the Secret."""
    key: Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")] = (
        "connectionString"
    )
    """Key within the Secret. Default: `connectionString`."""


class ConfigMapKeySelector(FedModel):
    """A key of a ConfigMap in the resource's namespace."""

    name: ResourceName
    """Name of the ConfigMap."""
    key: Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
    """Key within the ConfigMap."""


# A Microsoft Entra application's client ID (a GUID).
ClientId = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")]


class WorkloadIdentity(FedModel):
    """Microsoft Entra workload identity: the pod's federated credential, through `azure-identity`."""

    fully_qualified_namespace: Annotated[
        str,
        StringConstraints(
            max_length=253, pattern=r"^[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?(:[0-9]{1,5})?$"
        ),
    ]
    """Host name of the namespace, e.g. `contoso.servicebus.windows.net`."""
    client_id: ClientId | None = None
    """Client ID of the user-assigned managed identity. Default: the identity the service account is
    annotated with."""


class EmulatorNamespace(FedModel):
    """A namespace of Federator's built-in emulator. Local mode (`federator run`) only: an operator in a
    cluster reports such a resource as Stalled with reason `EmulatorOnlyInLocalMode`."""

    namespace: DnsLabel
    """Name of the emulator namespace."""


# A queue, or a topic with one of its subscriptions.
QUEUE_OR_SUBSCRIPTION_RULES = (
    ("has(self.queueName) != has(self.topicName)", "set either queueName or topicName"),
    (
        "has(self.topicName) == has(self.subscriptionName)",
        "subscriptionName is required with topicName, and only with it",
    ),
)


class QueueOrSubscription(FedModel):
    """A Service Bus queue, or a subscription of a topic: set `queueName`, or `topicName` with
    `subscriptionName`."""

    model_config = ConfigDict(json_schema_extra=cel(*QUEUE_OR_SUBSCRIPTION_RULES))

    queue_name: EntityName | None = None
    """A queue."""
    topic_name: EntityName | None = None
    """A topic (with `subscriptionName`)."""
    subscription_name: SubscriptionName | None = None
    """A subscription of `topicName`."""


class NamespaceConnection(FedModel):
    """How Federator reaches one Event Hubs or Service Bus namespace. Set exactly one of `secretRef`,
    `workloadIdentity` or `emulator`; connection strings never appear inline."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("secretRef", "workloadIdentity", "emulator")))

    secret_ref: SecretKeySelector | None = None
    """A Secret key holding the namespace's connection string."""
    workload_identity: WorkloadIdentity | None = None
    """Workload identity for the namespace (no secret at all)."""
    emulator: EmulatorNamespace | None = None
    """A namespace of the built-in emulator (local mode)."""


class FailoverGroupReference(FedModel):
    """A FailoverGroup whose active member this endpoint follows."""

    name: DnsLabel
    """Name of the FailoverGroup in the same namespace."""
    resume_skew_seconds: Annotated[int, Field(ge=0, le=3600)] = 60
    """After a failover, reading resumes at the last replicated event's source enqueue time minus this
    margin (clock skew between namespaces); events already handled are skipped by their `repl-*`
    metadata. Default: 60."""


class EndpointConnection(FedModel):
    """How a ReplicationTask reaches a source or target namespace: a namespace connection, or a
    FailoverGroup whose active member it follows. Set exactly one of `secretRef`, `workloadIdentity`,
    `emulator` or `failoverGroupRef`."""

    model_config = ConfigDict(
        json_schema_extra=cel(exactly_one("secretRef", "workloadIdentity", "emulator", "failoverGroupRef"))
    )

    secret_ref: SecretKeySelector | None = None
    """A Secret key holding the namespace's connection string."""
    workload_identity: WorkloadIdentity | None = None
    """Workload identity for the namespace (no secret at all)."""
    emulator: EmulatorNamespace | None = None
    """A namespace of the built-in emulator (local mode)."""
    failover_group_ref: FailoverGroupReference | None = None
    """Follow the active member of a FailoverGroup (consumers' member for sources, producers' for targets)."""


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(StatusModel):
    """A `metav1.Condition`: one aspect of the resource's current state."""

    type: Annotated[
        str,
        StringConstraints(
            max_length=316,
            pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        ),
    ]
    """Type in CamelCase: `Ready`, `Reconciling`, `Stalled` or a domain condition."""
    status: ConditionStatus
    """`True`, `False` or `Unknown`."""
    reason: Annotated[
        str,
        StringConstraints(min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
    ]
    """A single CamelCase word a program can match; documented per condition in docs/status.md."""
    message: Annotated[str, StringConstraints(max_length=32768)] = ""
    """What a human needs to know, e.g. which Secret is missing."""
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    """The `metadata.generation` the condition was computed from."""
    last_transition_time: datetime
    """When `status` last changed."""


class ObjectStatus(StatusModel):
    """What every kind's status has: the generation it describes and its conditions. The operator's shared
    status seam reads these through it; each kind's status adds its own fields."""

    observed_generation: int | None = None
    """The generation of the spec this status describes."""
    conditions: Annotated[list[Condition], Field(max_length=16, json_schema_extra=list_map("type"))] = []
    """`Ready`, `Reconciling`, `Stalled` and the kind's own conditions."""
