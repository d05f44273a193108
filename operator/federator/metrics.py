"""The operator's Prometheus metrics (one `federator_` prefix, base units)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry()

RECONCILE_DURATION = Histogram(
    "federator_reconcile_duration_seconds",
    "Time of one reconciliation pass.",
    ["kind"],
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
RECONCILE_ERRORS = Counter(
    "federator_reconcile_errors_total",
    "Reconciliation passes that ended Stalled or in an error, by reason.",
    ["kind", "reason"],
    registry=REGISTRY,
)
RESOURCES = Gauge(
    "federator_resources",
    "Resources by condition type and status.",
    ["kind", "condition", "status"],
    registry=REGISTRY,
)
MANAGEMENT_REQUESTS = Counter(
    "federator_management_requests_total",
    "HTTP requests to Azure management APIs (ARM quotas count these), retries included.",
    ["api", "method"],
    registry=REGISTRY,
)
FAILOVERS = Counter(
    "federator_failovers_total",
    "Switches of a FailoverGroup's producers to another member (failovers, planned switches, failbacks).",
    ["namespace", "group", "from", "to"],
    registry=REGISTRY,
)
FAILOVER_PHASE = Histogram(
    "federator_failover_phase_seconds",
    "How long each phase of a FailoverGroup's switch took: detected_to_decided, decided_to_published, "
    "decided_to_flowing (per following task).",
    ["namespace", "group", "phase"],
    registry=REGISTRY,
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600),
)

# (kind, namespace, name) → {condition type: status}, and the count of each (kind, type, status) over them:
# a pass changes the counts by its own resource only (recounting every resource made each pass cost O(n)).
_LATEST: dict[tuple[str, str, str], dict[str, str]] = {}
_COUNTS: dict[tuple[str, str, str], int] = {}


def record_conditions(kind: str, namespace: str, name: str, conditions: list[dict[str, Any]] | None) -> None:
    """Remember a resource's conditions (None: it is gone) and update the per-condition counts."""
    key = (kind, namespace, name)
    before = _LATEST.pop(key, {})
    after = {c["type"]: c["status"] for c in conditions} if conditions is not None else {}
    if after:
        _LATEST[key] = after
    if before == after:
        return
    for type_, status in before.items():
        _count((kind, type_, status), -1)
    for type_, status in after.items():
        _count((kind, type_, status), +1)


def _count(labels: tuple[str, str, str], change: int) -> None:
    count = _COUNTS.get(labels, 0) + change
    if count > 0:
        _COUNTS[labels] = count
        RESOURCES.labels(*labels).set(count)
    else:  # a series with no member left would report a stale count
        _COUNTS.pop(labels, None)
        RESOURCES.remove(*labels)


def serve(port: int, address: str = "0.0.0.0") -> None:
    start_http_server(port, addr=address, registry=REGISTRY)
