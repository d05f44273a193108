"""federator_resources: how many resources of a kind have each condition status, kept from each resource's
latest conditions (a pass updates the counts by its own resource only)."""

from __future__ import annotations

from federator import metrics


def conditions(ready: str, stalled: str = "False") -> list[dict[str, str]]:
    return [{"type": "Ready", "status": ready}, {"type": "Stalled", "status": stalled}]


def count(kind: str, condition: str, status: str) -> float | None:
    labels = {"kind": kind, "condition": condition, "status": status}
    return metrics.REGISTRY.get_sample_value("federator_resources", labels)


def test_counts_follow_each_resources_latest_conditions() -> None:
    kind = "MetricsTestKind"
    metrics.record_conditions(kind, "ns", "a", conditions("True"))
    metrics.record_conditions(kind, "ns", "b", conditions("True"))
    metrics.record_conditions(kind, "ns", "b", conditions("True"))  # the same again counts once
    assert count(kind, "Ready", "True") == 2

    metrics.record_conditions(kind, "ns", "b", conditions("False", stalled="True"))
    assert (count(kind, "Ready", "True"), count(kind, "Ready", "False"), count(kind, "Stalled", "True")) == (
        1,
        1,
        1,
    )


def test_a_resource_gone_is_no_longer_counted_and_empty_series_disappear() -> None:
    kind = "MetricsTestGone"
    metrics.record_conditions(kind, "ns", "a", conditions("True"))
    metrics.record_conditions(kind, "ns", "b", conditions("False", stalled="True"))
    metrics.record_conditions(kind, "ns", "b", None)
    assert count(kind, "Ready", "True") == 1
    assert count(kind, "Ready", "False") is None and count(kind, "Stalled", "True") is None
    metrics.record_conditions(kind, "ns", "gone-before-it-was-seen", None)
    assert count(kind, "Ready", "True") == 1
