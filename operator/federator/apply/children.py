"""Children as planned, written with server-side apply under one field manager (`FIELD_MANAGER`): created
when missing, re-applied when what Federator sets has drifted, adopted when found without their owner.

Only the fields Federator sets are sent and compared, so what other managers set — a Spark operator's
webhook's defaults, an annotation a user added — stays theirs and is not mistaken for drift. A field
Federator sets whose value another manager has since changed is theirs now: the API server refuses the
apply (409), and that is reported as an `ApplyConflict` naming each field and manager, never forced."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from federator.kube.client import FIELD_MANAGER, ApiError, KubeClient
from federator.kube.resources import ResourceRef
from federator.kube.verdicts import VERDICTS

FORMER_MANAGERS = frozenset({"federator-operator"})
"""Names Federator's own writes were recorded under before it applied (the API server names a manager
after the client's User-Agent): fields they hold are Federator's, taken over with `force`."""
_MANAGER = re.compile(r'conflict with "([^"]*)"')
_IDENTITY = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}


class Outcome(Enum):
    CREATED = "Created"
    RESTORED = "Restored"  # was edited by hand, or lost its owner
    UNCHANGED = "Unchanged"


@dataclass(frozen=True)
class FieldConflict:
    field: str
    """As the API server prints it, e.g. `.data.task.json`."""
    manager: str
    """The field manager that holds it, e.g. `kubectl-edit`."""


class ApplyConflict(Exception):
    """The API server refused an apply: fields Federator sets are held by other managers."""

    def __init__(self, child: str, conflicts: tuple[FieldConflict, ...], message: str) -> None:
        self.child = child
        self.conflicts = conflicts
        fields = "; ".join(f"{c.field} (held by {c.manager!r})" for c in conflicts) or message
        super().__init__(
            f"{child}: fields Federator sets were changed by another field manager: {fields}. Federator "
            f"does not overwrite them: undo the change, or remove the field from that manager's apply"
        )

    @classmethod
    def of(cls, child: str, err: ApiError) -> ApplyConflict:
        found = []
        for cause in err.causes:
            manager = _MANAGER.search(str(cause.get("message", "")))
            found.append(FieldConflict(str(cause.get("field", "")), manager.group(1) if manager else "?"))
        return cls(child, tuple(found), err.message)


async def ensure(
    client: KubeClient, ref: ResourceRef, desired: dict[str, Any], stored: dict[str, Any] | None
) -> tuple[Outcome, dict[str, Any]]:
    """Apply `desired` unless `stored` (the object as the caller read it; None when it does not exist)
    already holds it. Returns the object as stored now, so that callers observe it without another read.
    Raises ApplyConflict when another manager holds a field `desired` sets."""
    # Judged once per version of the child and plan: an idle pass walks no managedFields (kube/verdicts.py).
    if stored is not None and not VERDICTS.judged(drifted, desired, stored):
        return Outcome.UNCHANGED, stored
    meta = desired["metadata"]
    path = ref.path(meta["namespace"], meta["name"])
    child = f"{desired.get('kind', ref.plural)} {meta['name']}"
    try:
        created, written = await client.apply(path, desired)
    except ApiError as err:
        if err.status != 409:
            raise
        conflict = ApplyConflict.of(child, err)
        if not conflict.conflicts or any(c.manager not in FORMER_MANAGERS for c in conflict.conflicts):
            raise conflict from None
        created, written = await client.apply(path, desired, force=True)  # only our own former names
    if created:
        return Outcome.CREATED, written
    # Taking over fields that held Federator's values already (written before it applied) restores nothing.
    taken_over = stored is not None and owned(stored) is None and not differs(desired, stored)
    return (Outcome.UNCHANGED if taken_over else Outcome.RESTORED), written


def drifted(desired: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Whether an apply would change `actual`: a value Federator sets differs or is gone, or Federator
    holds a field it no longer sets (the apply removes it), or Federator never applied it."""
    held = owned(actual)
    return differs(desired, actual) or held is None or not held <= set(_leaves(desired))


def differs(desired: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Whether a value Federator sets differs from `actual`'s, or is missing there."""
    meta, have = desired["metadata"], actual.get("metadata") or {}
    if not all(contains(actual.get(s), desired[s]) for s in ("spec", "data") if s in desired):
        return True
    if not all(contains(have.get(f), meta[f]) for f in ("labels", "annotations") if f in meta):
        return True
    owners = have.get("ownerReferences") or []
    return not all(any(contains(o, w) for o in owners) for w in meta.get("ownerReferences") or [])


def owned(actual: Mapping[str, Any]) -> set[tuple[str, ...]] | None:
    """The fields Federator's applies hold (metadata.managedFields), lists and maps without keyed
    fields as one; None when Federator has not applied the object."""
    for entry in (actual.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Apply":
            return set(_held(entry.get("fieldsV1") or {}))
    return None


def _held(fields: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    # fieldsV1: "f:<name>" a field, "." the map itself, "k:"/"v:"/"i:" items of a list (held as a whole).
    named = {k[2:]: v for k, v in fields.items() if k.startswith("f:")}
    for name, below in named.items():
        inner = below if isinstance(below, dict) and any(k.startswith("f:") for k in below) else None
        yield from _held(inner, (*prefix, name)) if inner else [(*prefix, name)]


def _leaves(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict) and value:
        for key, below in value.items():
            if (*prefix, key) not in _IDENTITY:
                yield from _leaves(below, (*prefix, key))
    elif prefix:
        yield prefix


def contains(actual: Any, desired: Any) -> bool:
    """Whether `actual` holds everything `desired` says; extra keys in `actual` are defaults, not drift.
    Lists must match item by item, since their order and length carry meaning."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(
            k in actual and contains(actual[k], v) for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(desired)
            and all(contains(a, d) for a, d in zip(actual, desired, strict=True))
        )
    return bool(actual == desired)
