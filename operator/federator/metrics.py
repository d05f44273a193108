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

# (kind, namespace, name) → {condition type: status}; the gauge is recomputed from it.
_LATEST: dict[tuple[str, str, str], dict[str, str]] = {}
_SERIES: set[tuple[str, str, str]] = set()


def record_conditions(kind: str, namespace: str, name: str, conditions: list[dict[str, Any]] | None) -> None:
    """Remember a resource's conditions (None: it is gone) and refresh the per-condition counts."""
    key = (kind, namespace, name)
    if conditions is None:
        _LATEST.pop(key, None)
    else:
        _LATEST[key] = {c["type"]: c["status"] for c in conditions}
    counts: dict[tuple[str, str], int] = {}
    for (k, _, _), by_type in _LATEST.items():
        if k == kind:
            for type_, status in by_type.items():
                counts[(type_, status)] = counts.get((type_, status), 0) + 1
    for labels in [s for s in _SERIES if s[0] == kind and (s[1], s[2]) not in counts]:
        RESOURCES.remove(*labels)  # a series with no member left would report a stale count
        _SERIES.discard(labels)
    for (type_, status), count in counts.items():
        RESOURCES.labels(kind, type_, status).set(count)
        _SERIES.add((kind, type_, status))


def serve(port: int, address: str = "0.0.0.0") -> None:
    start_http_server(port, addr=address, registry=REGISTRY)
