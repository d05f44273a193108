"""What a reconciliation pass found, and how it becomes a status patch, conditions and Events: shared by
every kind's reconciler so they roll status up the same way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from federator.status import conditions as cond
from federator.status.events import Note

SPEC_WARNING = "SpecWarning"  # Event reason of a slip in the spec (`federator validate` prints the same)


@dataclass
class Findings:
    """What one pass found, before it is compared with the current status."""

    condition_updates: list[cond.ConditionUpdate]
    status_fields: dict[str, Any] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    retry_after: float | None = None


@dataclass
class Result:
    status_patch: dict[str, Any]
    """Only the status fields that change; empty when nothing does (no write at all)."""
    conditions: list[dict[str, Any]]
    notes: list[Note]
    """Events to post: what the pass did, and every change of the Ready condition."""
    retry_after: float | None = None
    """Set when the task waits on something outside it; the handler retries after this many seconds."""
    blocked_by: str | None = None


def status_result(body: dict[str, Any], found: Findings, spec_warnings: Sequence[object] = ()) -> Result:
    """Compare what a pass found with the status in ``body``: only what changes is patched; a change of
    Ready is announced as an Event. ``spec_warnings`` (slips in the spec, each printed as `path: message`)
    become Warning Events on the first pass of a generation only: once per generation."""
    status = body.get("status") or {}
    existing = status.get("conditions")
    generation = body["metadata"].get("generation")
    conditions = cond.apply_conditions(existing, found.condition_updates, generation)
    patch: dict[str, Any] = {}
    notes = list(found.notes)
    if status.get("observedGeneration") != generation:
        notes += [Note("Warning", SPEC_WARNING, str(warning)) for warning in spec_warnings]
    if not cond.same_conditions(existing, conditions):
        patch["conditions"] = conditions
        before, after = cond.find(existing, cond.READY), cond.find(conditions, cond.READY)
        if after is not None and (
            before is None or (before["status"], before["reason"]) != (after["status"], after["reason"])
        ):
            stalled = cond.find(conditions, cond.STALLED)
            kind: Literal["Normal", "Warning"] = (
                "Warning" if stalled and stalled["status"] == "True" else "Normal"
            )
            notes.append(Note(kind, after["reason"], after["message"] or after["reason"]))
    if status.get("observedGeneration") != generation:
        patch["observedGeneration"] = generation
    for key, value in found.status_fields.items():
        if status.get(key) != value:
            patch[key] = value
    blocked_by = found.condition_updates[0].reason if found.retry_after is not None else None
    return Result(patch, conditions, notes, found.retry_after, blocked_by)
