"""metav1.Condition lists, updated the way Kubernetes expects: one entry per type, the transition time
moving only when the status changes, and the kstatus triad kept consistent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from federator_contract.api.base import Condition, ObjectStatus

Status = Literal["True", "False", "Unknown"]
READY, RECONCILING, STALLED = "Ready", "Reconciling", "Stalled"


@dataclass(frozen=True)
class ConditionUpdate:
    type: str
    status: Status
    reason: str
    message: str = ""


def timestamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def apply_conditions(
    existing: Sequence[Mapping[str, Any]] | None,
    updates: list[ConditionUpdate],
    generation: int | None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The full new list (merge patches replace lists), as written: updated types replace their entry,
    keeping `lastTransitionTime` when the status is unchanged; other types are kept as they are."""
    by_type = {c.type: c for c in ObjectStatus.model_validate({"conditions": existing or []}).conditions}
    result = dict(by_type)
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    for update in updates:
        previous = by_type.get(update.type)
        unchanged = previous is not None and previous.status == update.status
        result[update.type] = Condition(
            type=update.type,
            status=update.status,
            reason=update.reason,
            message=update.message,
            observed_generation=generation,
            last_transition_time=previous.last_transition_time if unchanged and previous else moment,
        )
    order = [READY, RECONCILING, STALLED]
    ranked = sorted(result.values(), key=lambda c: (order.index(c.type) if c.type in order else 3, c.type))
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in ranked]


def ready(reason: str, message: str = "") -> list[ConditionUpdate]:
    """Everything is as specified."""
    return [
        ConditionUpdate(READY, "True", reason, message),
        ConditionUpdate(RECONCILING, "False", reason),
        ConditionUpdate(STALLED, "False", reason),
    ]


def reconciling(reason: str, message: str) -> list[ConditionUpdate]:
    """Progress is being made and will continue without anyone's help."""
    return [
        ConditionUpdate(READY, "False", reason, message),
        ConditionUpdate(RECONCILING, "True", reason, message),
        ConditionUpdate(STALLED, "False", reason),
    ]


def stalled(reason: str, message: str) -> list[ConditionUpdate]:
    """No progress without a change by a human (the message says which)."""
    return [
        ConditionUpdate(READY, "False", reason, message),
        ConditionUpdate(RECONCILING, "False", reason),
        ConditionUpdate(STALLED, "True", reason, message),
    ]


def find(conditions: list[dict[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions or [] if c.get("type") == type_), None)


def same_conditions(a: Sequence[Mapping[str, Any]] | None, b: Sequence[Mapping[str, Any]] | None) -> bool:
    """Equal apart from transition times (which only move with a status change anyway)."""
    if a == b:  # a settled pass: nothing to validate
        return True

    def strip(items: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
        return [
            c.model_dump(exclude={"last_transition_time"})
            for c in ObjectStatus.model_validate({"conditions": items or []}).conditions
        ]

    return strip(a) == strip(b)
