"""The emulator's configuration model (documented in docs/emulator.md): local mode writes it, the emulator
reads it (YAML or JSON; each side parses the text itself, so this package needs no YAML library).

Keys are camelCase with the unit in the name (``lockDurationSeconds``), like the
Kubernetes resources Federator manages. The same models serve as the live property bags
of entities, so a management plane can change them at runtime.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.alias_generators import to_camel

DEFAULT_KEY_NAME = "RootManageSharedAccessKey"
# Microsoft's own emulator's well-known key, not a secret: what keys without a value get only where the
# config opts in with ``sharedDefaultKey`` (every namespace then accepts every other's tokens).
DEFAULT_KEY_VALUE = "SAS_KEY_VALUE"
DEFAULT_CONSUMER_GROUP = "$Default"
DEFAULT_RULE_NAME = "$Default"
DEFAULT_SUBSCRIPTION_ID = "00000000-0000-0000-0000-000000000000"
DEFAULT_RESOURCE_GROUP = "emulator"
DEFAULT_TENANT_ID = "00000000-0000-0000-0000-0000000e0000"
# The audience Microsoft Entra expects in a federated (workload identity) token.
TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"

EntityName = Annotated[str, Field(min_length=1, max_length=260, pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


SasRight = Literal["Manage", "Send", "Listen"]
_ALL_SAS_RIGHTS: tuple[SasRight, ...] = ("Manage", "Send", "Listen")


class SasKey(_Model):
    name: str = Field(min_length=1)
    # None: the emulator gives the key a value of its own, different in every namespace (docs/emulator.md,
    # "SAS keys"); the ready file's connection strings carry it.
    key: str | None = Field(default=None, min_length=1)
    # The claims a token signed with this key carries, as on an Azure shared access policy.
    rights: list[SasRight] = Field(default_factory=lambda: list(_ALL_SAS_RIGHTS))


# Azure built-in roles the emulator knows: data roles give Send / Listen / Manage claims on the entities of
# their service; Owner, Contributor and Reader (and the data owners, whose actions include the resource
# provider's) act on the management plane (ARM); DNS Zone Contributor on DNS zones.
Role = Literal[
    "Azure Event Hubs Data Owner",
    "Azure Event Hubs Data Sender",
    "Azure Event Hubs Data Receiver",
    "Azure Service Bus Data Owner",
    "Azure Service Bus Data Sender",
    "Azure Service Bus Data Receiver",
    "Owner",
    "Contributor",
    "Reader",
    "DNS Zone Contributor",
]


class RoleAssignmentConfig(_Model):
    """A role granted to a Microsoft Entra principal on a namespace (or one of its entities) or DNS zone."""

    # The principal's client (application) id, object id or application name.
    principal: str = Field(min_length=1)
    role: Role
    # An entity of the namespace (``q1``, ``t1``, ``t1/subscriptions/s1``, ``hub1``); None: the whole
    # namespace (or zone).
    scope: str | None = None


class FederatedCredentialConfig(_Model):
    """Trust in tokens of an external identity provider (e.g. a Kubernetes service account token)."""

    # The token's ``iss``; None: the emulator's own workload issuer (tokens from
    # ``RunningEmulator.workload_identity_token``, as the AKS webhook would project them).
    issuer: str | None = None
    subject: str = Field(min_length=1)  # the token's ``sub``, e.g. system:serviceaccount:ns:name
    audience: str = TOKEN_EXCHANGE_AUDIENCE


class ApplicationConfig(_Model):
    """A Microsoft Entra application (its service principal) that can sign in to the token endpoint."""

    name: str = Field(min_length=1)
    client_id: str = Field(min_length=1)
    # None: derived from the client id (role assignments may name either, or the application's name).
    object_id: str | None = None
    # A client secret (ClientSecretCredential); None: the application has none.
    client_secret: str | None = None
    federated_credentials: list[FederatedCredentialConfig] = Field(default_factory=list)


class TrustedIssuerConfig(_Model):
    """An external token issuer whose signing keys the emulator reads from a JWKS file."""

    issuer: str = Field(min_length=1)
    jwks_path: Path


class IdentityConfig(_Model):
    """The emulated Microsoft Entra tenant (the token endpoint on every namespace's TLS port)."""

    tenant_id: str = DEFAULT_TENANT_ID
    applications: list[ApplicationConfig] = Field(default_factory=list)
    trusted_issuers: list[TrustedIssuerConfig] = Field(default_factory=list)
    token_lifetime_seconds: int = Field(default=3600, ge=60, le=86400)

    @model_validator(mode="after")
    def _unique_applications(self) -> IdentityConfig:
        for attribute in ("name", "client_id"):
            values = [getattr(a, attribute) for a in self.applications]
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise ValueError(f"identity.applications: duplicate {to_camel(attribute)} {duplicates}")
        return self


class EventHubConfig(_Model):
    name: EntityName
    partition_count: int = Field(default=2, ge=1, le=1024)
    consumer_groups: list[str] = Field(default_factory=list)
    retention_seconds: int = Field(default=86400, ge=1)

    @property
    def all_consumer_groups(self) -> list[str]:
        """Declared groups plus ``$Default``, which every event hub has."""
        return [DEFAULT_CONSUMER_GROUP, *(g for g in self.consumer_groups if g != DEFAULT_CONSUMER_GROUP)]


RuleValue = StrictBool | StrictInt | StrictFloat | Decimal | datetime | timedelta | uuid.UUID | StrictStr
"""A typed value of a rule (a SQL parameter, a correlation filter property), as the SDKs send them."""


class _Tag(NamedTuple):
    kind: type
    dump: Callable[[Any], Any]
    load: Callable[[Any], Any]


_MICROSECOND = timedelta(microseconds=1)
# JSON (the journal's form) has no date, duration, decimal or uuid: such values are tagged, {"tag": …}.
_TAGS = {
    "datetime": _Tag(datetime, datetime.isoformat, datetime.fromisoformat),
    "microseconds": _Tag(timedelta, lambda span: span // _MICROSECOND, lambda n: n * _MICROSECOND),
    "decimal": _Tag(Decimal, str, Decimal),
    "uuid": _Tag(uuid.UUID, str, uuid.UUID),
}


def _tagged(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        tag = next((name for name, tag in _TAGS.items() if isinstance(value, tag.kind)), None)
        out[key] = value if tag is None else {tag: _TAGS[tag].dump(value)}
    return out


def _untagged(values: Any) -> Any:
    if not isinstance(values, dict):
        return values
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TAGS:
            ((tag, raw),) = value.items()
            value = _TAGS[tag].load(raw)
        out[key] = value
    return out


RuleValues = Annotated[
    dict[str, RuleValue], BeforeValidator(_untagged), PlainSerializer(_tagged, when_used="json")
]


class CorrelationFilterConfig(_Model):
    correlation_id: str | None = None
    message_id: str | None = None
    label: str | None = None
    to: str | None = None
    reply_to: str | None = None
    session_id: str | None = None
    content_type: str | None = None
    properties: RuleValues = Field(default_factory=dict)


class RuleConfig(_Model):
    """A subscription rule: at most one of the two filter kinds; no filter means true.

    Parameters bind the ``@name`` placeholders of the SQL filter and action (``SqlRuleFilter`` and
    ``SqlRuleAction`` parameters), keys with or without the ``@``.
    """

    name: str = Field(min_length=1, max_length=50)  # "$Default" is a valid rule name
    sql_filter: str | None = None
    sql_filter_parameters: RuleValues = Field(default_factory=dict)
    correlation_filter: CorrelationFilterConfig | None = None
    sql_action: str | None = None
    sql_action_parameters: RuleValues = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_filter(self) -> RuleConfig:
        if self.sql_filter is not None and self.correlation_filter is not None:
            raise ValueError(f"rule {self.name!r}: give sqlFilter or correlationFilter, not both")
        if self.sql_filter_parameters and self.sql_filter is None:
            raise ValueError(f"rule {self.name!r}: sqlFilterParameters need a sqlFilter")
        if self.sql_action_parameters and self.sql_action is None:
            raise ValueError(f"rule {self.name!r}: sqlActionParameters need a sqlAction")
        return self


class _ReceivableConfig(_Model):
    lock_duration_seconds: float = Field(default=60, gt=0, le=300)
    max_delivery_count: int = Field(default=10, ge=1)
    default_message_ttl_seconds: float | None = Field(default=None, gt=0)
    dead_lettering_on_message_expiration: bool = False
    requires_session: bool = False
    # Free text the owner keeps on the entity (management APIs only), e.g. Federator's ownership marker.
    user_metadata: str | None = Field(default=None, max_length=1024)


class _DuplicateDetectionConfig(_Model):
    requires_duplicate_detection: bool = False
    duplicate_detection_window_seconds: float = Field(default=600, gt=0)


class QueueConfig(_ReceivableConfig, _DuplicateDetectionConfig):
    name: EntityName


class SubscriptionConfig(_ReceivableConfig):
    name: EntityName
    # None: the subscription gets the ``$Default`` true-filter rule, as on Azure.
    rules: list[RuleConfig] | None = None


class TopicConfig(_DuplicateDetectionConfig):
    name: EntityName
    default_message_ttl_seconds: float | None = Field(default=None, gt=0)
    subscriptions: list[SubscriptionConfig] = Field(default_factory=list)


class ArmCoordinates(_Model):
    """Where the namespace lives in the emulated Azure Resource Manager (ARM paths carry these)."""

    subscription_id: str = DEFAULT_SUBSCRIPTION_ID
    resource_group: str = DEFAULT_RESOURCE_GROUP
    # None: the namespace's own ``name``.
    namespace_name: str | None = None


class NamespaceConfig(_Model):
    name: EntityName
    host: str = "127.0.0.1"
    # 0 asks the OS for a free port; the ready file says which one was bound.
    amqp_port: int = Field(default=0, ge=0, le=65535)
    # The namespace's TLS port: HTTPS management (ATOM for this namespace, ARM, DNS and the token
    # endpoint for all), AMQP over TLS and AMQP over WebSockets; 0 = ephemeral.
    https_port: int = Field(default=0, ge=0, le=65535)
    # Optionally a second port with the same services, e.g. 5671 beside 443 where clients use Azure's ports.
    amqps_port: int | None = Field(default=None, ge=0, le=65535)
    arm: ArmCoordinates = Field(default_factory=ArmCoordinates)
    # The largest message (or batch) a sender may transfer, announced on every link: Azure's limit is
    # 256 KB for Event Hubs Basic and Service Bus Standard, 1 MB for Event Hubs Standard.
    max_message_size_bytes: int = Field(default=1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    keys: list[SasKey] = Field(default_factory=lambda: [SasKey(name=DEFAULT_KEY_NAME)])
    # Roles of Microsoft Entra principals here (the emulator's built-in administrator is Owner everywhere).
    role_assignments: list[RoleAssignmentConfig] = Field(default_factory=list)
    event_hubs: list[EventHubConfig] = Field(default_factory=list)
    queues: list[QueueConfig] = Field(default_factory=list)
    topics: list[TopicConfig] = Field(default_factory=list)

    @property
    def arm_namespace_name(self) -> str:
        return self.arm.namespace_name or self.name

    @model_validator(mode="after")
    def _unique_names(self) -> NamespaceConfig:
        entities: list[EventHubConfig | QueueConfig | TopicConfig] = [
            *self.event_hubs,
            *self.queues,
            *self.topics,
        ]
        names = [e.name.lower() for e in entities]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"namespace {self.name!r}: duplicate entity names {duplicates}")
        if not self.keys:
            raise ValueError(f"namespace {self.name!r}: at least one SAS key is required")
        key_names = [k.name for k in self.keys]
        repeated = sorted({n for n in key_names if key_names.count(n) > 1})
        if repeated:
            raise ValueError(f"namespace {self.name!r}: keys: duplicate key names {repeated}")
        return self


class DnsZoneConfig(_Model):
    """An Azure DNS zone the management plane serves record sets for (``azure-mgmt-dns``)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9.\-]*$")
    subscription_id: str = DEFAULT_SUBSCRIPTION_ID
    resource_group: str = DEFAULT_RESOURCE_GROUP
    role_assignments: list[RoleAssignmentConfig] = Field(default_factory=list)


class EmulatorConfig(_Model):
    namespaces: list[NamespaceConfig] = Field(min_length=1)
    dns_zones: list[DnsZoneConfig] = Field(default_factory=list)
    identity: IdentityConfig = Field(default_factory=IdentityConfig)
    # More names the TLS certificate covers (beside localhost, 127.0.0.1, ::1 and bind hosts), for clients
    # that reach the emulator by a DNS name of their own (e.g. one mapped to loopback in /etc/hosts).
    tls_host_names: list[str] = Field(default_factory=list)
    # Opt-in compatibility with Microsoft's emulator: keys without a value get the well-known
    # DEFAULT_KEY_VALUE, the same in every namespace, so a token for one namespace works on all of them.
    shared_default_key: bool = False
    # With a data dir, fsync each write before acknowledging it. Off trades crash safety
    # (a power loss, not a process kill) for speed.
    fsync: bool = True

    @model_validator(mode="after")
    def _unique_namespaces(self) -> EmulatorConfig:
        names = [n.name for n in self.namespaces]
        if len(set(names)) != len(names):
            raise ValueError("namespace names must be unique")
        return self
