"""An object's fields as server-side apply sees them: the set of fields an object sets, what a write
changed field by field, and merging and removing fields (structured-merge-diff's ``typed/tofieldset.go``,
``typed/compare.go``, ``typed/remove.go``, without schemas: see ``server_side_apply.py``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

Obj = dict[str, Any]
# One field of an object, each element spelt as in FieldsV1: ("f:spec", "f:replicas"), or
# ("f:metadata", "f:ownerReferences", 'k:{"uid":"1"}') for an item of a keyed list.
Path = tuple[str, ...]
Ignored = Callable[[Path], bool]

# Lists the API server merges item by item: by key fields, or as sets of scalars. Any other list is atomic.
ASSOCIATIVE: dict[tuple[str, ...], tuple[str, ...]] = {("metadata", "ownerReferences"): ("uid",)}
SETS: frozenset[tuple[str, ...]] = frozenset({("metadata", "finalizers")})

# Fields no manager owns (the API server's "strip meta" set): identity and server-owned metadata.
_SERVER_OWNED = (
    "name namespace creationTimestamp selfLink uid clusterName generation managedFields resourceVersion"
)
UNMANAGED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {("f:metadata", f"f:{n}") for n in _SERVER_OWNED.split()}
)
_ABSENT: Any = object()


_IMMUTABLE = (str, int, float, bool, type(None))
T = TypeVar("T")


def json_copy(value: T) -> T:
    """A deep copy of a JSON value, as ``copy.deepcopy`` makes it but several times faster (no memo, no
    dispatch per type): a fake API server copies whole objects on every write. Other types (a YAML set)
    are left to ``copy.deepcopy``."""
    return cast(T, _copy(value))


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {key: _copy(item) for key, item in value.items()}
    if type(value) is list:
        return [_copy(item) for item in value]
    if isinstance(value, _IMMUTABLE):
        return value
    return copy.deepcopy(value)


def _item_element(schema: tuple[str, ...], item: Any) -> str:
    """The path element of an item of a keyed list or a set."""
    keys = ASSOCIATIVE.get(schema)
    if keys is not None and isinstance(item, dict):
        return "k:" + json.dumps({k: item.get(k) for k in sorted(keys)}, separators=(",", ":"))
    return "v:" + json.dumps(item, separators=(",", ":"), sort_keys=True)


def _granular(schema: tuple[str, ...]) -> bool:
    return schema in ASSOCIATIVE or schema in SETS


def _items(schema: tuple[str, ...], value: Any) -> dict[str, Any]:
    return {_item_element(schema, item): item for item in value} if isinstance(value, list) else {}


def field_set(obj: Obj) -> set[Path]:
    """The fields an applied object sets (structured-merge-diff's ``ToFieldSet``): its scalars, atomic
    lists and empty maps, and each item of a keyed list or set; unmanaged metadata left out."""
    out: set[Path] = set()
    _collect_map(obj, (), (), out)
    return out - UNMANAGED


def _collect_map(value: Obj, schema: tuple[str, ...], path: Path, out: set[Path]) -> None:
    for key, child in value.items():
        _collect(child, (*schema, key), (*path, f"f:{key}"), out)


def _collect(value: Any, schema: tuple[str, ...], path: Path, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        _collect_map(value, schema, path, out)
    elif isinstance(value, list) and _granular(schema):
        for element, item in _items(schema, value).items():
            out.add((*path, element))
            if isinstance(item, dict) and schema in ASSOCIATIVE:
                _collect_map(item, schema, (*path, element), out)
    else:
        out.add(path)


@dataclass
class Comparison:
    """structured-merge-diff's ``Compare``: what a write added, removed and changed, field by field."""

    added: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)

    def changed(self) -> set[Path]:
        return self.added | self.modified

    def without(self, ignored: Ignored) -> Comparison:
        def keep(paths: set[Path]) -> set[Path]:
            return {p for p in paths if not ignored(p) and p not in UNMANAGED}

        return Comparison(keep(self.added), keep(self.removed), keep(self.modified))


def compare(old: Obj, new: Obj) -> Comparison:
    result = Comparison()
    _compare(without_managed_fields(old), without_managed_fields(new), (), (), result)
    result.added.discard(())
    result.removed.discard(())
    return result


def without_managed_fields(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _compare(lhs: Any, rhs: Any, schema: tuple[str, ...], path: Path, out: Comparison) -> None:
    # Equal values hold no difference: one C-level comparison instead of a walk (a status write leaves
    # the rest of the object as it was).
    if lhs is not _ABSENT and rhs is not _ABSENT and lhs == rhs:
        return
    if _is_container(lhs, rhs, dict):
        left_map, right_map = _map_or_empty(lhs), _map_or_empty(rhs)
        for key in list(left_map) + [k for k in right_map if k not in left_map]:
            left, right = left_map.get(key, _ABSENT), right_map.get(key, _ABSENT)
            _compare(left, right, (*schema, key), (*path, f"f:{key}"), out)
    elif _granular(schema) and _is_container(lhs, rhs, list):
        left_items, right_items = _items(schema, lhs), _items(schema, rhs)
        for element in list(left_items) + [e for e in right_items if e not in left_items]:
            left, right = left_items.get(element, _ABSENT), right_items.get(element, _ABSENT)
            if schema in SETS:
                _leaf(left, right, (*path, element), out)
            else:
                _compare(left, right, schema, (*path, element), out)
    else:
        _leaf(lhs, rhs, path, out)
        return
    if lhs is _ABSENT:
        out.added.add(path)
    elif rhs is _ABSENT:
        out.removed.add(path)


def _is_container(lhs: Any, rhs: Any, kind: type) -> bool:
    """Both sides of that type (or absent), and not both empty: empty ones compare as leaves."""
    sides = [v for v in (lhs, rhs) if v is not _ABSENT]
    return all(isinstance(v, kind) for v in sides) and any(sides)


def _map_or_empty(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _leaf(lhs: Any, rhs: Any, path: Path, out: Comparison) -> None:
    if lhs is _ABSENT:
        out.added.add(path)
    elif rhs is _ABSENT:
        out.removed.add(path)
    elif lhs != rhs:
        out.modified.add(path)


def merge(live: Any, applied: Any, schema: tuple[str, ...] = ()) -> Any:
    """The applied object merged into the live one: maps key by key, keyed lists and sets item by item,
    anything else replaced; a ``null`` removes the field."""
    if isinstance(applied, dict):
        out = dict(live) if isinstance(live, dict) else {}
        for key, value in applied.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(out.get(key, _ABSENT), value, (*schema, key))
        return out
    if isinstance(applied, list) and _granular(schema):
        return _merge_items(live if isinstance(live, list) else [], applied, schema)
    return json_copy(applied)


def _merge_items(live: list[Any], applied: list[Any], schema: tuple[str, ...]) -> list[Any]:
    """Item by item: live items in their order (merged with the applied ones), then new applied items."""
    result, applied_items = _items(schema, live), _items(schema, applied)
    for element, item in applied_items.items():
        result[element] = merge(result.get(element, _ABSENT), item, schema)
    return list(result.values())


def remove(obj: Obj, paths: set[Path]) -> Obj:
    """The object without those fields. A map or list left empty by a removal goes too (the API server
    nulls it, then prunes the null), but not its parents."""
    result = json_copy(obj)
    for path in sorted(paths, key=len, reverse=True):
        _remove_one(result, path, ())
    return result


def _remove_one(node: Any, path: Path, schema: tuple[str, ...]) -> bool:
    """Remove ``path`` under ``node`` in place; True when ``node`` was emptied by it."""
    head, rest = path[0], path[1:]
    if isinstance(node, dict) and head.startswith("f:") and head[2:] in node:
        key = head[2:]
        if not rest or _remove_one(node[key], rest, (*schema, key)):
            del node[key]
            return not rest and not node
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if _item_element(schema, item) == head:
                if not rest or _remove_one(item, rest, schema):
                    del node[index]
                    return not rest and not node
                break
    return False
