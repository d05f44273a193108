"""Conditions follow metav1.Condition and kstatus: one per type, transitions timed, triad consistent."""

from __future__ import annotations

from datetime import UTC, datetime

from federator.status.conditions import apply_conditions, ready, reconciling, same_conditions, stalled

T0 = datetime(2026, 11, 1, 0, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 1, 0, 5, 0, tzinfo=UTC)


def _by_type(conditions: list[dict]) -> dict[str, dict]:
    return {c["type"]: c for c in conditions}


def test_the_triad_is_always_written_together() -> None:
    for updates in (ready("Running"), reconciling("Progressing", "m"), stalled("InvalidSpec", "m")):
        assert {u.type for u in updates} == {"Ready", "Reconciling", "Stalled"}
    assert [u.status for u in stalled("X", "m")] == ["False", "False", "True"]
    assert [u.status for u in reconciling("X", "m")] == ["False", "True", "False"]


def test_transition_time_moves_only_when_the_status_changes() -> None:
    first = apply_conditions(None, reconciling("SparkApplicationPending", "waiting"), 1, T0)
    same = apply_conditions(first, reconciling("SparkApplicationRestarting", "again"), 1, T1)
    assert _by_type(same)["Ready"]["lastTransitionTime"] == "2026-11-01T00:00:00Z"
    assert _by_type(same)["Ready"]["reason"] == "SparkApplicationRestarting"
    flipped = apply_conditions(same, ready("Running"), 2, T1)
    assert _by_type(flipped)["Ready"]["lastTransitionTime"] == "2026-11-01T00:05:00Z"
    assert _by_type(flipped)["Ready"]["observedGeneration"] == 2


def test_other_condition_types_are_kept_and_ordered_after_the_triad() -> None:
    existing = [
        {
            "type": "SourceReachable",
            "status": "True",
            "reason": "Probed",
            "message": "",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-10-01T00:00:00Z",
        }
    ]
    result = apply_conditions(existing, ready("Running"), 1, T0)
    assert [c["type"] for c in result] == ["Ready", "Reconciling", "Stalled", "SourceReachable"]


def test_equal_conditions_mean_no_write() -> None:
    first = apply_conditions(None, ready("Running"), 1, T0)
    again = apply_conditions(first, ready("Running"), 1, T1)
    assert same_conditions(first, again)
    assert not same_conditions(first, apply_conditions(first, ready("Running"), 2, T1))


def test_every_reason_is_documented_in_the_status_reference() -> None:
    from pathlib import Path

    from federator.reasons import BY_CONDITION

    text = (Path(__file__).resolve().parents[2] / "docs" / "status.md").read_text(encoding="utf-8")
    missing = [r for reasons in BY_CONDITION.values() for r in reasons if f"`{r}`" not in text]
    assert missing == []
