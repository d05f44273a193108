"""The Grafana dashboard in the chart parses, and queries only the metrics Federator exports, by their
documented labels; every metric is on it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from chart_support import CHART

from support.resources import ROOT

DASHBOARD = CHART / "dashboards" / "federator.json"
# The metric contract (docs/observability.md): name -> labels. Histograms add _bucket/_sum/_count and `le`.
METRICS: dict[str, set[str]] = {
    "federator_failover_phase_seconds": {"namespace", "group", "phase"},
    "federator_replication_lag_seconds": {"namespace", "task", "partition"},
    "federator_replication_lag_events": {"namespace", "task", "partition"},
    "federator_failover_rpo_seconds": {"namespace", "task"},
    "federator_replication_latency_seconds": {"namespace", "task"},
    "federator_events_replicated_total": {"namespace", "task", "target"},
    "federator_events_dead_lettered_total": {"namespace", "task", "target"},
    "federator_events_dropped_total": {"namespace", "task", "reason"},
    "federator_failovers_total": {"namespace", "group", "from", "to"},
    "federator_management_requests_total": {"api", "method"},
    "federator_reconcile_duration_seconds": {"kind"},
    "federator_resources": {"kind", "condition", "status"},
    "federator_reconcile_errors_total": {"kind", "reason"},
    "federator_batch_duration_seconds": {"namespace", "task"},  # the Spark app's last micro-batch
    "federator_endpoint_unavailable": {"namespace", "task", "role", "endpoint", "reason"},
}
HISTOGRAMS = {"federator_reconcile_duration_seconds", "federator_failover_phase_seconds"}
SERIES = re.compile(r"\b(federator_[a-z_]+)\s*(\{[^}]*\})?")


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # rows


def expressions(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        query = var.get("query")
        if isinstance(query, dict):
            exprs.append(query["query"])
    return exprs


def metric_of(series: str) -> str:
    for histogram in HISTOGRAMS:
        if series in {f"{histogram}_bucket", f"{histogram}_sum", f"{histogram}_count"}:
            return histogram
    return series


DASH = json.loads(DASHBOARD.read_text(encoding="utf-8"))


def test_dashboard_is_valid_grafana_json() -> None:
    assert DASH["uid"] == "federator-overview" and DASH["title"]
    ids = [p["id"] for p in panels(DASH)]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in panels(DASH):
        assert panel["targets"], f"panel {panel['title']!r} queries nothing"
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_queries_use_only_federators_metrics_and_their_labels() -> None:
    used: set[str] = set()
    for expr in expressions(DASH):
        found = SERIES.findall(expr)
        assert found, f"no federator_ metric in {expr!r}"
        for series, matchers in found:
            metric = metric_of(series)
            assert metric in METRICS, f"unknown metric {series} in {expr!r}"
            used.add(metric)
            labels = set(re.findall(r"([a-z_]+)\s*(?:=~|!~|!=|=)", matchers))
            allowed = METRICS[metric] | ({"le"} if metric in HISTOGRAMS else set())
            assert labels <= allowed, f"{series} has no label(s) {labels - allowed}: {expr!r}"
        for grouping in re.findall(r"\bby\s*\(([^)]*)\)", expr):
            grouped = {g.strip() for g in grouping.split(",")}
            metrics = {metric_of(s) for s, _ in found}
            allowed = set.union(*(METRICS[m] for m in metrics)) | {"le"}
            assert grouped <= allowed, f"grouping by {grouped - allowed} in {expr!r}"
    assert used == set(METRICS), f"not on the dashboard: {set(METRICS) - used}"


def test_counters_are_rated_and_histograms_use_buckets() -> None:
    for expr in expressions(DASH):
        for series, _ in SERIES.findall(expr):
            if series.endswith("_total"):
                assert re.search(rf"(rate|increase)\(\s*{series}\b", expr), f"raw counter in {expr!r}"
            if series in HISTOGRAMS:
                raise AssertionError(f"histogram {series} without _bucket/_sum/_count in {expr!r}")


def test_observability_doc_lists_the_same_metrics() -> None:
    doc = (ROOT / "docs" / "observability.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`(federator_[a-z_]+)`", doc))
    assert set(METRICS) <= documented
    assert documented - set(METRICS) <= {f"{h}_{s}" for h in HISTOGRAMS for s in ("bucket", "sum", "count")}
