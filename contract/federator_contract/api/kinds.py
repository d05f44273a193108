"""The four kinds as the Kubernetes API sees them: names, models, printer columns, root-level rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from federator_contract.api.base import API_VERSION, FedModel, cel
from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverGroupStatus
from federator_contract.api.replicationapplication import (
    ReplicationApplicationSpec,
    ReplicationApplicationStatus,
)
from federator_contract.api.replicationtask import ReplicationTaskSpec, ReplicationTaskStatus
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec, ServiceBusMirrorStatus

READY = '.status.conditions[?(@.type=="Ready")]'


# eq=False: kinds are singletons, hashed by identity (they key caches of compiled schemas).
@dataclass(frozen=True, eq=False)
class Kind:
    """One custom resource kind of group federator.io."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec: type[FedModel]
    status: type[FedModel]
    description: str
    printer_columns: tuple[dict[str, Any], ...]
    # Rules on the whole object, e.g. bounds on the name for generated children. No fieldPath: the root
    # `metadata` schema declares no properties for a path to point into.
    root_rules: dict[str, Any] = field(default_factory=dict)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return API_VERSION


def _ready_columns() -> tuple[dict[str, Any], ...]:
    return (
        {"name": "Ready", "type": "string", "jsonPath": f"{READY}.status"},
        {"name": "Reason", "type": "string", "jsonPath": f"{READY}.reason"},
    )


def _name_at_most(kind: str, limit: int) -> dict[str, Any]:
    """A root rule bounding the object's name, which the names of its children are built from."""
    return cel(
        (
            f"self.metadata.name.size() <= {limit}",
            f"a {kind} name has at most {limit} characters",
            ".metadata.name",
        )
    )


AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
SPARK_STATE = {"name": "Spark", "type": "string", "priority": 1, "jsonPath": ".status.sparkApplication.state"}
MESSAGE = {"name": "Message", "type": "string", "priority": 1, "jsonPath": f"{READY}.message"}

REPLICATION_TASK = Kind(
    kind="ReplicationTask",
    plural="replicationtasks",
    short_names=("rt",),
    spec=ReplicationTaskSpec,
    status=ReplicationTaskStatus,
    description="One replication flow: a source, an editor chain, and one or more targets, run as a Spark "
    "Structured Streaming application.",
    printer_columns=(
        *_ready_columns(),
        {
            "name": "Lag",
            "type": "number",
            "jsonPath": ".status.lag.secondsBehind",
            "description": "Seconds behind in the worst source partition",
        },
        {
            "name": "Behind",
            "type": "integer",
            "jsonPath": ".status.lag.eventsBehind",
            "description": "Events not replicated yet, all partitions",
        },
        {"name": "Replicated", "type": "integer", "jsonPath": ".status.eventsReplicated"},
        {
            "name": "Worst",
            "type": "string",
            "priority": 1,
            "jsonPath": ".status.lag.worstPartition",
            "description": "The source partition furthest behind",
        },
        {
            "name": "RPO",
            "type": "number",
            "priority": 1,
            "jsonPath": ".status.lag.rpoSeconds",
            "description": "What a failover now would leave behind, in seconds",
        },
        SPARK_STATE,
        MESSAGE,
        AGE,
    ),
    # The Spark driver pod is named `<task>-driver`; pod names are DNS labels (63 characters).
    root_rules=_name_at_most("ReplicationTask", 50),
)

SERVICE_BUS_MIRROR = Kind(
    kind="ServiceBusMirror",
    plural="servicebusmirrors",
    short_names=("sbm",),
    spec=ServiceBusMirrorSpec,
    status=ServiceBusMirrorStatus,
    description="A Service Bus topology across namespaces (allActive, activePassive or spillover): "
    "replication subscriptions and rules, and the ReplicationTasks that move the messages.",
    printer_columns=(
        {"name": "Pattern", "type": "string", "jsonPath": ".spec.pattern"},
        *_ready_columns(),
        MESSAGE,
        AGE,
    ),
    # Generated tasks are named `<mirror>-<source>-<target>`.
    root_rules=_name_at_most("ServiceBusMirror", 24),
)

FAILOVER_GROUP = Kind(
    kind="FailoverGroup",
    plural="failovergroups",
    short_names=("fg",),
    spec=FailoverGroupSpec,
    status=FailoverGroupStatus,
    description="A primary and secondary namespaces: probes their health, fails over and back, and publishes "
    "the active endpoints for producers and consumers.",
    printer_columns=(
        {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Producers", "type": "string", "jsonPath": ".status.producerMember"},
        {"name": "Consumers", "type": "string", "jsonPath": ".status.consumerMember"},
        *_ready_columns(),
        MESSAGE,
        AGE,
    ),
    # The endpoints ConfigMap carries the group's name as a label value (63 characters at most).
    root_rules=_name_at_most("FailoverGroup", 63),
)

REPLICATION_APPLICATION = Kind(
    kind="ReplicationApplication",
    plural="replicationapplications",
    short_names=("rapp",),
    spec=ReplicationApplicationSpec,
    status=ReplicationApplicationStatus,
    description="One Spark application whose driver runs the queries of many ReplicationTasks (those whose "
    "spec.runtime.applicationRef names it): one JVM, one identity, the tasks' batches in scheduler pools.",
    printer_columns=(
        {
            "name": "Members",
            "type": "integer",
            "jsonPath": ".status.memberCount",
            "description": "ReplicationTasks that run in the application",
        },
        *_ready_columns(),
        SPARK_STATE,
        MESSAGE,
        AGE,
    ),
    # As a task's: the Spark driver pod is named `<application>-driver`, a DNS label (63 characters).
    root_rules=_name_at_most("ReplicationApplication", 50),
)

KINDS: tuple[Kind, ...] = (REPLICATION_TASK, SERVICE_BUS_MIRROR, FAILOVER_GROUP, REPLICATION_APPLICATION)
BY_KIND: dict[str, Kind] = {k.kind: k for k in KINDS}
