"""Conditions follow metav1.Condition and kstatus: one per type, transitions timed, triad consistent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from federator.status import conditions
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


class _Unvalidated:
    """Stands in for the status model where a settled pass must not validate anything."""

    @staticmethod
    def model_validate(value: object) -> None:
        raise AssertionError(f"validated {value!r}")


def test_a_settled_pass_returns_the_conditions_as_stored_without_validating(monkeypatch: Any) -> None:
    first = apply_conditions(None, reconciling("SparkApplicationPending", "waiting"), 3, T0)
    monkeypatch.setattr(conditions, "ObjectStatus", _Unvalidated)
    again = apply_conditions(first, reconciling("SparkApplicationPending", "waiting"), 3, T1)
    assert again == first
    assert again[0] is not first[0]  # a copy: the caller may change it


STORED = apply_conditions(None, reconciling("SparkApplicationPending", "waiting"), 1, T0)
DIFFERENT_STORES = {
    "status": [{**STORED[0], "status": "True"}, *STORED[1:]],
    "reason": [{**STORED[0], "reason": "Other"}, *STORED[1:]],
    "message": [{**STORED[0], "message": "other"}, *STORED[1:]],
    "generation": [{**c, "observedGeneration": 2} for c in STORED],
    "no generation": [{k: v for k, v in c.items() if k != "observedGeneration"} for c in STORED],
    "generation as a bool": [{**STORED[0], "observedGeneration": True}, *STORED[1:]],
    "order": [STORED[1], STORED[0], STORED[2]],
    "a field this operator does not write": [{**STORED[0], "note": "x"}, *STORED[1:]],
    "another time zone format": [
        {**STORED[0], "lastTransitionTime": "2026-11-01T00:00:00+00:00"},
        *STORED[1:],
    ],
    "fractions of a second": [{**STORED[0], "lastTransitionTime": "2026-11-01T00:00:00.000Z"}, *STORED[1:]],
    "another condition type": [*STORED, {**STORED[0], "type": "SourceReachable"}],
}


@pytest.mark.parametrize("stored", DIFFERENT_STORES.values(), ids=DIFFERENT_STORES.keys())
def test_a_stored_list_that_differs_in_any_way_is_written_as_validation_writes_it(
    stored: list[dict[str, Any]],
) -> None:
    expected = [dict(c) for c in STORED]
    if _by_type(stored)["Ready"]["status"] != "False":
        expected[0]["lastTransitionTime"] = "2026-11-01T00:05:00Z"  # the status changes back: a transition
    expected += [c for c in stored if c["type"] == "SourceReachable"]  # another type is kept as it is
    result = apply_conditions(stored, reconciling("SparkApplicationPending", "waiting"), 1, T1)
    assert result == expected
    # True == 1 in Python, not in JSON
    assert [type(c["observedGeneration"]) for c in result] == [int] * len(result)


@pytest.mark.parametrize("moment", ["2026-11-01T0:0:0Z", "2026-13-01T00:00:00Z", {"at": 0}])
def test_a_stored_time_validation_refuses_is_refused_as_before(moment: object) -> None:
    stored = [{**STORED[0], "lastTransitionTime": moment}, *STORED[1:]]
    with pytest.raises(ValidationError):
        apply_conditions(stored, reconciling("SparkApplicationPending", "waiting"), 1, T1)
