"""Children as planned: created when missing, put back when edited by hand, adopted when found
without their owner. Only the fields Federator sets are compared, so defaults added by other
controllers (e.g. a Spark operator's webhook) are not mistaken for drift."""

from __future__ import annotations

from enum import Enum
from typing import Any

from federator.kube.client import JSON_PATCH, ApiError, KubeClient, ResourceRef


class Outcome(Enum):
    CREATED = "Created"
    RESTORED = "Restored"  # was edited by hand, or lost its owner
    UNCHANGED = "Unchanged"


async def ensure(
    client: KubeClient, ref: ResourceRef, desired: dict[str, Any], stored: dict[str, Any] | None
) -> tuple[Outcome, dict[str, Any]]:
    """Create `desired`, or bring `stored` (the object as the caller read it; None when it does not exist)
    back to it. Returns the object as stored now, so that callers observe it without another read."""
    meta = desired["metadata"]
    path = ref.path(meta["namespace"], meta["name"])
    actual = stored
    if actual is None:
        try:
            return Outcome.CREATED, await client.create(ref.path(meta["namespace"]), desired)
        except ApiError as err:
            if err.status != 409:
                raise
            actual = await client.get(path) or {}  # created concurrently: compare with that one
    patch = drift_patch(desired, actual)
    if not patch:
        return Outcome.UNCHANGED, actual
    return Outcome.RESTORED, await client.patch(path, patch, JSON_PATCH)


def drift_patch(desired: dict[str, Any], actual: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON-patch operations that restore what Federator owns: the whole `spec`/`data`, and the labels
    and owner references it sets. Empty when nothing Federator owns has drifted."""
    ops: list[dict[str, Any]] = []
    for section in ("spec", "data"):
        if section in desired and not contains(actual.get(section), desired[section]):
            ops.append(
                {
                    "op": "replace" if section in actual else "add",
                    "path": f"/{section}",
                    "value": desired[section],
                }
            )
    actual_meta = actual.get("metadata") or {}
    for field in ("labels", "ownerReferences"):
        want = desired["metadata"].get(field)
        if want is None:
            continue
        have = actual_meta.get(field)
        if field == "labels":
            merged = {**(have or {}), **want}
            if merged != have:
                ops.append(
                    {
                        "op": "replace" if have is not None else "add",
                        "path": "/metadata/labels",
                        "value": merged,
                    }
                )
        elif not all(owner in (have or []) for owner in want):
            others = [o for o in have or [] if o.get("uid") not in {w.get("uid") for w in want}]
            value = others + want
            ops.append(
                {
                    "op": "replace" if have is not None else "add",
                    "path": "/metadata/ownerReferences",
                    "value": value,
                }
            )
    return ops


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
