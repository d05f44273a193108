"""metav1.Condition lists, updated the way Kubernetes expects: one entry per type, the transition time
moving only when the status changes, and the kstatus triad kept consistent."""

from __future__ import annotations

import functools
import re
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
    settled = _already_written(existing, updates, generation)
    if settled is not None:
        return settled
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
    ranked = sorted(result.values(), key=lambda c: _rank(c.type))
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in ranked]


def _rank(type_: str) -> tuple[int, str]:
    """The triad first, in its order, then the kind's own conditions by type."""
    order = (READY, RECONCILING, STALLED)
    return (order.index(type_) if type_ in order else 3, type_)


# How `timestamp` and the model write a time, to the second (fromisoformat alone takes other forms too).
_WRITTEN_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
# The wire names of the two fields an update does not carry, as the contract's model spells them.
_GENERATION = Condition.model_fields["observed_generation"].alias or "observed_generation"
_TRANSITION = Condition.model_fields["last_transition_time"].alias or "last_transition_time"


def _already_written(
    existing: Sequence[Mapping[str, Any]] | None, updates: list[ConditionUpdate], generation: int | None
) -> list[dict[str, Any]] | None:
    """`existing` as `apply_conditions` would write it, when it already says everything the updates say:
    a settled pass (every task, every interval) then validates nothing. None unless every entry is exactly
    as this module writes one for its update, in order (no other type, field or time format)."""
    types = {u.type for u in updates}
    if not existing or len(existing) != len(updates) or len(types) != len(updates):
        return None
    expected = sorted(updates, key=lambda u: _rank(u.type))
    if all(_written_for(entry, update, generation) for entry, update in zip(existing, expected, strict=True)):
        return [dict(entry) for entry in existing]
    return None


def _written_for(entry: Mapping[str, Any], update: ConditionUpdate, generation: int | None) -> bool:
    """The entry is exactly what this module writes for `update`: its fields, no other, a time as written."""
    if (entry.get("type"), entry.get("status")) != (update.type, update.status):
        return False
    if (entry.get("reason"), entry.get("message")) != (update.reason, update.message):
        return False
    if generation is None:
        fields = 5
    elif entry.get(_GENERATION) != generation or type(entry[_GENERATION]) is not int:
        return False  # (True == 1, but a bool is not a generation)
    else:
        fields = 6
    moment = entry.get(_TRANSITION)
    return len(entry) == fields and isinstance(moment, str) and _valid_time(moment)


@functools.lru_cache(maxsize=4096)  # a task's transition times repeat every pass
def _valid_time(value: str) -> bool:
    if not _WRITTEN_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:  # e.g. month 13
        return False
    return True


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
