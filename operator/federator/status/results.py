"""What a reconciliation pass found, and how it becomes a status patch, conditions and Events: shared by
every kind's reconciler so they roll status up the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from federator import reasons
from federator.status import conditions as cond
from federator.status.events import Note
from federator_contract.api.base import ObjectStatus, StatusModel


@dataclass
class Findings:
    """What one pass found, before it is compared with the current status."""

    condition_updates: list[cond.ConditionUpdate]
    status_fields: dict[str, Any] = field(default_factory=dict)
    """The status fields the pass owns, as written: made by `written` from the kind's status model."""
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
    observed = status_field(ObjectStatus, status, "observed_generation")
    generation = body["metadata"].get("generation")
    new_generation = written(ObjectStatus(observed_generation=generation)) if observed != generation else {}
    conditions = cond.apply_conditions(existing, found.condition_updates, generation)
    patch: dict[str, Any] = {}
    notes = list(found.notes)
    if observed != generation:
        notes += [Note("Warning", reasons.SPEC_WARNING, str(warning)) for warning in spec_warnings]
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
    patch.update(new_generation)
    for key, value in found.status_fields.items():
        if status.get(key) != value:
            patch[key] = value
    blocked_by = found.condition_updates[0].reason if found.retry_after is not None else None
    return Result(patch, conditions, notes, found.retry_after, blocked_by)


def written(status: StatusModel) -> dict[str, Any]:
    """The fields set on ``status`` (a kind's status model, or part of it), as a status merge patch writes
    them: camelCase, unknown figures left out, and a field set to None as None (which removes it)."""
    dumped = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    fields = type(status).model_fields
    keys = sorted((fields[n].alias or n) if n in fields else n for n in status.model_fields_set)
    return {key: dumped.get(key) for key in keys}


def status_field(model: type[StatusModel], status: Mapping[str, Any] | None, name: str) -> Any:
    """Field `name` of a stored status as `model` reads it, validating that field alone: a pass asks for
    one or two fields of a status whose conditions alone take tens of microseconds to validate (every
    task, every interval). The key is the model's alias; every status field is optional."""
    key = model.model_fields[name].alias or name
    found = {key: status[key]} if status is not None and key in status else {}
    return getattr(model.model_validate(found), name)
