"""Typed views of Federator's objects as the API server returns them: statuses read through the contract's
status models, conditions ranked worst first, lag figures. Tolerant by design: an operator newer than the
plugin may write fields the plugin does not know (kept), and an object just created has no status yet."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass

from federator_contract.api.base import Condition, ObjectStatus
from federator_contract.api.failovergroup import FailoverGroupStatus, ProbeResult
from federator_contract.api.replicationapplication import ReplicationApplicationStatus
from federator_contract.api.replicationtask import ReplicationTaskStatus
from federator_contract.api.servicebusmirror import ServiceBusMirrorStatus

Obj = dict[str, Any]
S = TypeVar("S", bound=ObjectStatus)

OK, NOTE, WARNING, ERROR = 0, 1, 2, 3
SEVERITY_NAMES = {OK: "ok", NOTE: "progressing", WARNING: "warning", ERROR: "error"}
# Domain conditions whose normal state is True (False means something is missing or broken).
_POSITIVE = {
    "Ready",
    "SparkApplicationRunning",
    "SourceReachable",
    "CheckpointVolumeShared",
    "RulesProvisioned",
    "TasksReady",
}
# Conditions whose True is abnormal: kstatus's Reconciling/Stalled, and FailedOver (the group is not where
# it is meant to be).
_ABNORMAL_TRUE = {"Reconciling": NOTE, "Stalled": ERROR, "FailedOver": NOTE}
# Facts rather than progress: Unknown says there is nothing to measure (no task copies into a member),
# not that something is under way; False is worth a look.
_FACTS = {"LosslessFailover"}
# The operator rewrites an unchanged probe result this often (failover/state.py, PROBE_STATUS_REFRESH).
PROBE_STATUS_REFRESH_SECONDS = 60
# A lag figure is of the last batch: older than this, it may no longer be the task's lag.
STALE_BATCH_SECONDS = 300


class View(BaseModel):
    """What the plugin prints with `-o json|yaml`: snake_case here, camelCase there, as the API's objects."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


@dataclass(frozen=True, config=ConfigDict(alias_generator=to_camel, populate_by_name=True))
class ConditionView:
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: datetime | None

    @classmethod
    def of(cls, condition: Condition) -> ConditionView:
        c = condition
        return cls(c.type, c.status, c.reason, c.message, c.last_transition_time)

    @property
    def severity(self) -> int:
        if self.type in _ABNORMAL_TRUE:
            return _ABNORMAL_TRUE[self.type] if self.status == "True" else OK
        if self.type in _FACTS:
            return NOTE if self.status == "False" else OK
        if self.status == "True":
            return OK
        if self.type in _POSITIVE:
            return WARNING if self.status == "False" else NOTE
        return NOTE if self.status == "Unknown" else OK

    def to_dict(self) -> dict[str, Any]:
        shown = _CONDITION.dump_python(self, mode="json", by_alias=True)
        return {**shown, "severity": SEVERITY_NAMES[self.severity]}


_CONDITION = TypeAdapter(ConditionView)


def meta(obj: Obj) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def spec_of(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def status_of(obj: Obj) -> Obj:
    return obj.get("status") or {}


def typed_status(obj: Obj, model: type[S]) -> S:
    """The object's status through the contract's model. Fields the model does not know are kept (a newer
    operator's); a field it cannot read as it knows it is left out, so one odd field does not hide the rest
    of the status."""
    raw = dict(status_of(obj))
    while True:
        try:
            return model.model_validate(raw)
        except ValidationError as err:
            unreadable = {str(e["loc"][0]) for e in err.errors() if e["loc"]} & raw.keys()
            if not unreadable:
                return model()
            for key in unreadable:
                del raw[key]


def group_status(group: Obj) -> FailoverGroupStatus:
    return typed_status(group, FailoverGroupStatus)


def task_status(task: Obj) -> ReplicationTaskStatus:
    return typed_status(task, ReplicationTaskStatus)


def mirror_status(mirror: Obj) -> ServiceBusMirrorStatus:
    return typed_status(mirror, ServiceBusMirrorStatus)


def application_status(application: Obj) -> ReplicationApplicationStatus:
    return typed_status(application, ReplicationApplicationStatus)


def application_of(task: Obj) -> str | None:
    """The ReplicationApplication (of the task's namespace) the task runs in: `spec.runtime.applicationRef`;
    None for a task with a Spark application of its own."""
    ref = (spec_of(task).get("runtime") or {}).get("applicationRef") or {}
    return str(ref["name"]) if ref.get("name") else None


def conditions(obj: Obj) -> list[ConditionView]:
    """The object's conditions, worst first (then Ready first, then by type)."""
    found = [ConditionView.of(c) for c in typed_status(obj, ObjectStatus).conditions]
    return sorted(found, key=lambda c: (-c.severity, c.type != "Ready", c.type))


def condition(obj: Obj, type_: str) -> ConditionView | None:
    return next((c for c in conditions(obj) if c.type == type_), None)


def severity(obj: Obj) -> int:
    """How bad the object looks: its worst condition; no conditions at all means not reconciled yet."""
    found = conditions(obj)
    if not found:
        return WARNING
    ready = next((c for c in found if c.type == "Ready"), None)
    worst = max(c.severity for c in found)
    return worst if ready is None or ready.status == "True" else max(worst, WARNING)


def headline(obj: Obj) -> tuple[str, str, str]:
    """(state, reason, message) in kstatus terms: Stalled, Reconciling, Ready or NotReady."""
    found = {c.type: c for c in conditions(obj)}
    for type_ in ("Stalled", "Reconciling"):
        c = found.get(type_)
        if c is not None and c.status == "True":
            return type_, c.reason, c.message
    ready = found.get("Ready")
    if ready is None:
        return "Unknown", "NotReconciled", "the operator has not written a status yet (is it running?)"
    return ("Ready" if ready.status == "True" else "NotReady"), ready.reason, ready.message


def worst_first(objects: list[Obj]) -> list[Obj]:
    return sorted(objects, key=lambda o: (-severity(o), meta(o)))


class Lag(View):
    """How far one source partition of a task (or the task as a whole) is behind."""

    partition: str | None
    """None: the task as a whole."""
    seconds_behind: float | None
    events_behind: int | None
    events_replicated: int | None
    last_batch_time: datetime | None


def lag_of(task: Obj) -> list[Lag]:
    """The one place that reads lag from a ReplicationTask's status: a row per source partition when the
    status carries them (`status.lag.partitions`, Event Hubs sources), else one row for the task with the
    latency of its last batch (`replicationLagSeconds`)."""
    status = task_status(task)
    replicated, last_batch = status.events_replicated, status.last_batch_time
    partitions = status.lag.partitions if status.lag is not None else []
    if partitions:
        return [
            Lag(
                partition=p.partition,
                seconds_behind=p.seconds_behind,
                events_behind=p.events_behind,
                events_replicated=replicated,
                last_batch_time=last_batch,
            )
            for p in partitions
        ]
    return [
        Lag(
            partition=None,
            seconds_behind=status.replication_lag_seconds,
            events_behind=None,
            events_replicated=replicated,
            last_batch_time=last_batch,
        )
    ]


def parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def ago(value: Any, now: datetime | None = None) -> str:
    """`2026-11-01T12:00:00Z` → `3m ago` (empty when there is no time)."""
    when = parse_time(value)
    if when is None:
        return ""
    return f"{duration((now or datetime.now(UTC)) - when)} ago"


def age_seconds(value: Any, now: datetime) -> float | None:
    when = parse_time(value)
    return None if when is None else (now - when).total_seconds()


def stale_batch(last_batch_time: Any, now: datetime) -> bool:
    """The task's figures are of a batch long past: no batch for STALE_BATCH_SECONDS."""
    age = age_seconds(last_batch_time, now)
    return age is not None and age > STALE_BATCH_SECONDS


def stale_probe(probe: ProbeResult, period_seconds: int, now: datetime) -> bool:
    """A probe result older than the operator's refresh of unchanged results plus a few probe periods: no
    one has probed since (is the operator running?)."""
    age = age_seconds(probe.last_probe_time, now)
    return age is not None and age > PROBE_STATUS_REFRESH_SECONDS + 3 * period_seconds


def duration(delta: Any) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def following_groups(task: Obj) -> dict[str, str]:
    """Which FailoverGroups the task follows: group name → `source`, `targets` or `source+targets`."""
    spec = spec_of(task)
    roles: dict[str, set[str]] = {}
    for role, endpoint in endpoints(spec):
        ref = (endpoint.get("connection") or {}).get("failoverGroupRef") or {}
        if ref.get("name"):
            roles.setdefault(str(ref["name"]), set()).add("source" if role == "source" else "targets")
    return {name: "+".join(sorted(r, key=["source", "targets"].index)) for name, r in roles.items()}


def endpoints(spec: Obj) -> list[tuple[str, Obj]]:
    """Every (role, endpoint body) of a task spec: `source`, `target:<name>`, `unrouted`, `deadLetter`,
    where the body is the `eventHub` / `serviceBus` / `postgres` mapping."""
    found: list[tuple[str, Obj]] = []
    source = spec.get("source") or {}
    for body in source.values():
        if isinstance(body, dict):
            found.append(("source", body))
    for target in spec.get("targets") or []:
        found.extend((f"target:{target.get('name', '')}", body) for body in _bodies(target))
    for role in ("unrouted", "deadLetter"):
        found.extend((role, body) for body in _bodies(spec.get(role) or {}))
    return found


def _bodies(endpoint: Obj) -> list[Obj]:
    return [endpoint[k] for k in ("eventHub", "serviceBus", "postgres") if isinstance(endpoint.get(k), dict)]
