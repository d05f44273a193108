"""What `kubectl federator status` shows, as typed views of the objects: built by status.py from the
statuses (read through the contract's models), printed by `-o json|yaml` as `to_dict()` (camelCase), and
drawn as a tree."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import field_serializer

from federator.kubectl.model import (
    SEVERITY_NAMES,
    ConditionView,
    Lag,
    Obj,
    View,
    conditions,
    headline,
    meta,
    severity,
    typed_status,
)
from federator_contract.api.base import ObjectStatus
from federator_contract.api.failovergroup import DrainHold, ProbeResult
from federator_contract.api.servicebusmirror import PairStatus


class ResourceView(View):
    """What every kind shows: its kstatus headline, its generations and its conditions, worst first."""

    kind: str
    namespace: str
    name: str
    state: str
    reason: str
    message: str
    severity: str
    observed_generation: int | None
    generation: int | None
    conditions: list[ConditionView]

    @field_serializer("conditions")
    def _conditions(self, conditions: list[ConditionView]) -> list[dict[str, Any]]:
        return [c.to_dict() for c in conditions]  # with each one's severity

    @classmethod
    def fields_of(cls, obj: Obj) -> dict[str, Any]:
        ns, name = meta(obj)
        state, reason, message = headline(obj)
        return {
            "kind": obj.get("kind", ""),
            "namespace": ns,
            "name": name,
            "state": state,
            "reason": reason,
            "message": message,
            "severity": SEVERITY_NAMES[severity(obj)],
            "observed_generation": typed_status(obj, ObjectStatus).observed_generation,
            "generation": (obj.get("metadata") or {}).get("generation"),
            "conditions": conditions(obj),
        }


class PodView(View):
    name: str
    role: str
    phase: str
    restarts: int
    reason: str


class SparkView(View):
    api_version: str | None = None
    name: str | None = None
    state: str | None = None
    pods: list[PodView] = []


class TaskView(ResourceView):
    follows: str | None
    """What of the task follows the group it is shown under: `source`, `targets` or both."""
    application: str | None = None
    """The ReplicationApplication the task's query runs in; None: a Spark application of its own."""
    active_source_member: str | None
    spark_application: SparkView
    events_dead_lettered: int | None
    lag: list[Lag]


class MemberView(View):
    name: str
    endpoint: str | None
    primary: bool
    roles: list[str]
    probe: ProbeResult | None


class GroupView(ResourceView):
    failing_members: list[str]
    probe_period_seconds: int
    mode: str
    phase: str | None
    primary_member: str | None
    active_member: str | None
    producer_member: str | None
    consumer_member: str | None
    producer_since: datetime | None
    consumer_since: datetime | None
    drain_pending: list[DrainHold]
    endpoints_config_map: str
    members: list[MemberView]
    tasks: list[TaskView]


class EntityView(View):
    path: str
    rules: list[dict[str, str]]


class MirrorMemberView(View):
    name: str
    state: str
    reason: str
    message: str
    entities: list[EntityView]


class PairView(PairStatus):
    task: TaskView | None = None


class MirrorView(ResourceView):
    pattern: str | None
    members: list[MirrorMemberView]
    pairs: list[PairView]


class ApplicationMemberView(View):
    name: str
    shown_under: str | None
    """Where the task is drawn in full when a FailoverGroup or a ServiceBusMirror shows it (`task` None)."""
    task: TaskView | None


class ApplicationView(ResourceView):
    scheduling: str
    """How the members' queries share the executors: `FAIR` or `FIFO`."""
    spark_application: SparkView
    members: list[ApplicationMemberView]
    """Every ReplicationTask that names the application, worst first."""


class StatusView(View):
    failover_groups: list[GroupView]
    service_bus_mirrors: list[MirrorView]
    replication_applications: list[ApplicationView] = []
    replication_tasks: list[TaskView]
