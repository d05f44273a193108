"""Typed views of Federator's objects as the API server returns them (plain JSON): conditions ranked worst
first, lag figures, members. Tolerant by design: an operator newer than the plugin may write fields the
plugin does not know, and an object just created has no status yet."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]

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


@dataclass(frozen=True)
class ConditionView:
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str

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
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
            "severity": SEVERITY_NAMES[self.severity],
        }


def meta(obj: Obj) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def spec_of(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def status_of(obj: Obj) -> Obj:
    return obj.get("status") or {}


def conditions(obj: Obj) -> list[ConditionView]:
    """The object's conditions, worst first (then Ready first, then by type)."""
    found = [
        ConditionView(
            type=str(c.get("type", "")),
            status=str(c.get("status", "Unknown")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
            last_transition_time=str(c.get("lastTransitionTime", "")),
        )
        for c in status_of(obj).get("conditions") or []
        if isinstance(c, dict)
    ]
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


@dataclass(frozen=True)
class Lag:
    """How far one source partition of a task (or the task as a whole) is behind."""

    partition: str | None
    """None: the task as a whole."""
    seconds_behind: float | None
    events_behind: int | None
    events_replicated: int | None
    last_batch_time: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "secondsBehind": self.seconds_behind,
            "eventsBehind": self.events_behind,
            "eventsReplicated": self.events_replicated,
            "lastBatchTime": self.last_batch_time,
        }


def lag_of(task: Obj) -> list[Lag]:
    """The one place that reads lag from a ReplicationTask's status: a row per source partition when the
    status carries them (`status.lag.partitions`, Event Hubs sources), else one row for the task with the
    latency of its last batch (`replicationLagSeconds`)."""
    status = status_of(task)
    replicated = _integer(status.get("eventsReplicated"))
    last_batch = status.get("lastBatchTime")
    partitions = (status.get("lag") or {}).get("partitions") or []
    if partitions:
        return [
            Lag(
                partition=str(p.get("partition")),
                seconds_behind=_number(p.get("secondsBehind")),
                events_behind=_integer(p.get("eventsBehind")),
                events_replicated=replicated,
                last_batch_time=last_batch,
            )
            for p in partitions
        ]
    return [
        Lag(
            partition=None,
            seconds_behind=_number(status.get("replicationLagSeconds")),
            events_behind=None,
            events_replicated=replicated,
            last_batch_time=last_batch,
        )
    ]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _integer(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def parse_time(value: Any) -> datetime | None:
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


def stale_probe(probe: Obj, period_seconds: int, now: datetime) -> bool:
    """A probe result older than the operator's refresh of unchanged results plus a few probe periods: no
    one has probed since (is the operator running?)."""
    age = age_seconds(probe.get("lastProbeTime"), now)
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
