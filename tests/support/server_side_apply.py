"""Field management and server-side apply, computed the way the Kubernetes API server does it.

Pure functions over JSON objects, used by the test API server (``support/kubeapi.py``): they never change
what they are given, and a result may share the parts a write left as they were. They follow the
Kubernetes docs ("Server-Side Apply", kubernetes.io/docs/reference/using-api/server-side-apply/) and the
library the API server uses for them, sigs.k8s.io/structured-merge-diff (``merge/update.go``: ``Apply``,
``Update``, ``prune``; ``typed/compare.go``, ``typed/tofieldset.go``, ``typed/remove.go``):

* an object's ``metadata.managedFields`` has one entry per manager (name, operation ``Apply`` or
  ``Update``, subresource, and for ``Update`` the apiVersion), each with its set of fields encoded as
  FieldsV1 (``f:<field>``, ``k:<key JSON>`` for an item of a keyed list, ``v:<JSON>`` for an item of a
  set, ``.`` when a node is itself owned as well as some of its children);
* an apply merges the applied object into the live one, owns exactly the fields it applied, and removes
  the fields it applied last time and no longer does, unless another manager owns them;
* an apply that changes a field another manager owns is a conflict (:class:`ApplyConflict`) unless
  forced, which moves the field to the applier; any other write (``Update``) always succeeds and takes
  the fields it changes from their managers.

There are no schemas here, so every object is treated as a structure of maps whose lists are atomic
(a whole list is one field, as for a custom resource's lists without ``x-kubernetes-list-type``),
except the lists of ``field_sets.ASSOCIATIVE`` (``metadata.ownerReferences``, keyed by ``uid``)
and ``field_sets.SETS`` (``metadata.finalizers``). A ``null`` in an applied object removes the field and
the applier owns it (the API server prunes the null). Not modelled: schema-driven defaults, conversion
between versions, the cap of ten ``Update`` managers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from .field_sets import (
    Comparison,
    Ignored,
    Obj,
    Path,
    compare,
    field_set,
    json_copy,
    merge,
    remove,
    without_managed_fields,
)

# What an object had before its first apply belongs to this manager (as on the API server).
BEFORE_FIRST_APPLY = "before-first-apply"
APPLY, UPDATE = "Apply", "Update"


def nothing_ignored(path: Path) -> bool:
    return False


def ignored_fields(status_subresource: bool, subresource: str) -> Ignored:
    """The fields whose changes an endpoint resets (the API server's reset fields): with a status
    subresource, the main endpoint ignores ``.status``, and ``/status`` everything else."""
    if not status_subresource:
        return nothing_ignored
    if subresource == "status":
        return lambda path: path[:1] != ("f:status",)
    return lambda path: path[:1] == ("f:status",)


class InvalidApply(Exception):
    """An apply request the API server refuses, with its HTTP code."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(message)


def applied_object(
    field_manager: str | None, body: str, write: Write, kind: str | None, name: str | None
) -> Obj:
    """The object an apply patch carries (YAML, or JSON as kubectl sends it), checked as the API server
    checks it: a field manager, the URL's apiVersion, kind and name, no managedFields."""
    if not field_manager:
        required = "fieldManager: Required value: is required for apply patch"
        raise InvalidApply(422, f'PatchOptions.meta.k8s.io "" is invalid: {required}')
    applied = _decoded(body)
    if not isinstance(applied, dict):
        raise InvalidApply(400, "error decoding YAML: the apply patch must be an object")
    if applied.get("apiVersion") != write.api_version:
        raise InvalidApply(
            400,
            "Incorrect version specified in apply patch. "
            f"Specified patch version: {applied.get('apiVersion')}, expected: {write.api_version}",
        )
    if kind is not None and applied.get("kind") != kind:
        raise InvalidApply(400, f"kind: the apply patch is for {applied.get('kind')!r}, not {kind!r}")
    meta = applied.get("metadata") or {}
    if meta.get("name") != name:
        url_name = f"the name on the URL ({name})"
        raise InvalidApply(400, f"the name of the object ({meta.get('name')}) does not match {url_name}")
    if meta.get("managedFields") is not None:
        raise InvalidApply(400, "metadata.managedFields must be nil in an apply patch")
    return applied


def _decoded(body: str) -> Any:
    """JSON is YAML, and what clients send (kubectl, the Python client): decoded as JSON first, at C speed
    (pure-Python YAML was a third of the server's CPU in bench.operator_scale); anything else as YAML."""
    try:
        return json.loads(body)
    except ValueError:
        pass
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as e:
        raise InvalidApply(400, f"error decoding YAML: {e}") from e


# -- managers --------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Manager:
    """A managedFields entry's identity: the API server keeps one entry per distinct value of this."""

    name: str
    operation: str
    subresource: str = ""
    api_version: str = ""  # part of the identity of Update entries only

    def describe(self) -> str:
        """As the API server names a manager in a conflict message."""
        text = json.dumps(self.name)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


@dataclass
class Managed:
    """The fields each manager owns, with the apiVersion and time of its entry."""

    fields: dict[Manager, set[Path]] = field(default_factory=dict)
    versions: dict[Manager, str] = field(default_factory=dict)
    times: dict[Manager, str] = field(default_factory=dict)
    stored: dict[Manager, tuple[set[Path], Obj]] = field(default_factory=dict, compare=False)
    """Each manager's fields as this server stored them (set and FieldsV1): written back as they were
    while the set is the same, instead of encoded again (every write re-encoded every manager)."""

    def owned_by_others(self, me: Manager) -> Iterator[tuple[Manager, set[Path]]]:
        return ((m, s) for m, s in self.fields.items() if m != me)

    def owned(self) -> set[Path]:
        return set().union(*self.fields.values())

    def drop_empty(self) -> None:
        for manager in [m for m, s in self.fields.items() if not s]:
            del self.fields[manager]
            self.versions.pop(manager, None)
            self.times.pop(manager, None)


def decode(obj: Obj, *, stored: bool = True) -> Managed:
    """The managers of an object, from its ``metadata.managedFields``; ``stored`` when this server wrote
    them (so their FieldsV1 is already encoded as `encode` would), not a client."""
    managed = Managed()
    for entry in obj.get("metadata", {}).get("managedFields") or []:
        version = entry.get("apiVersion", "")
        operation = entry.get("operation", UPDATE)
        manager = Manager(
            entry.get("manager", ""),
            operation,
            entry.get("subresource", ""),
            version if operation == UPDATE else "",
        )
        managed.fields[manager] = set(_decode_set(entry.get("fieldsV1") or {}, ()))
        if stored:
            managed.stored[manager] = (set(managed.fields[manager]), entry.get("fieldsV1") or {})
        managed.versions[manager] = version
        managed.times[manager] = entry.get("time", "")
    managed.drop_empty()
    return managed


def _decode_set(node: Obj, prefix: Path) -> Iterator[Path]:
    for element, children in node.items():
        if element == ".":
            yield prefix
            continue
        path = (*prefix, element)
        if children:
            yield from _decode_set(children, path)
        else:
            yield path


def encode(managed: Managed) -> list[Obj]:
    """``metadata.managedFields``, sorted as the API server sorts it (operation, time, manager...)."""
    entries = []
    for manager, paths in managed.fields.items():
        entry: Obj = {"manager": manager.name, "operation": manager.operation}
        entry["apiVersion"] = managed.versions.get(manager, manager.api_version)
        entry["time"] = managed.times.get(manager, "")
        entry["fieldsType"] = "FieldsV1"
        kept, fields_v1 = managed.stored.get(manager, (None, None))
        entry["fieldsV1"] = json_copy(fields_v1) if kept == paths else _encode_set(paths)
        if manager.subresource:
            entry["subresource"] = manager.subresource
        entries.append(entry)
    return sorted(
        entries,
        key=lambda e: (e["operation"], e["time"], e["manager"], e["apiVersion"], e.get("subresource", "")),
    )


def _encode_set(paths: set[Path]) -> Obj:
    root: Obj = {}
    for path in paths:
        node = root
        for element in path:
            node = node.setdefault(element, {})
    for path in paths:  # a node both owned and a parent of owned fields says so with "."
        node = root
        for element in path:
            node = node[element]
        if node and "." not in node:
            node["."] = {}
    return _sorted_tree(root)


def _sorted_tree(node: Obj) -> Obj:
    return {key: _sorted_tree(node[key]) for key in sorted(node, key=lambda k: (k != ".", k))}


def describe_path(path: Path) -> str:
    """A field as the API server prints it in a conflict: ``.metadata.ownerReferences[uid="1"]``."""
    parts = []
    for element in path:
        kind, text = element[0], element[2:]
        if kind == "f":
            parts.append("." + text)
        elif kind == "k":
            parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(text).items()) + "]")
        else:
            parts.append(f"[={text}]")
    return "".join(parts)


# -- the two operations ----------------------------------------------------------------------------


class ApplyConflict(Exception):
    """An apply would change fields other managers own: (manager, field) pairs, sorted."""

    def __init__(self, conflicts: list[tuple[Manager, Path]]) -> None:
        self.conflicts = conflicts
        super().__init__(self.message())

    def message(self) -> str:
        """The API server's message, word for word."""
        if len(self.conflicts) == 1:
            manager, path = self.conflicts[0]
            return f"Apply failed with 1 conflict: conflict with {manager.describe()}: {describe_path(path)}"
        lines: list[str] = []
        for manager in sorted({m for m, _ in self.conflicts}):
            lines.append(f"conflicts with {manager.describe()}:")
            lines.extend(f"- {describe_path(p)}" for m, p in self.conflicts if m == manager)
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[Obj]:
        """``details.causes`` of the 409 Status: one per field."""
        return [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {manager.describe()}",
                "field": describe_path(path),
            }
            for manager, path in self.conflicts
        ]


@dataclass(frozen=True)
class Write:
    """Who writes, through which endpoint, at which apiVersion and when."""

    manager: str
    api_version: str
    now: str
    subresource: str = ""
    ignored: Ignored = nothing_ignored


def _settle(managed: Managed, me: Manager, diff: Comparison, force: bool) -> None:
    """structured-merge-diff's ``update``: others lose what the write removed, and what it changed
    (if forced; else that is a conflict)."""
    conflicts = sorted(
        (manager, path) for manager, paths in managed.owned_by_others(me) for path in paths & diff.changed()
    )
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    for _, paths in managed.owned_by_others(me):
        paths -= diff.changed() | diff.removed


def _with_managed(obj: Obj, managed: Managed) -> Obj:
    managed.drop_empty()
    meta = obj.setdefault("metadata", {})
    meta.pop("managedFields", None)
    if managed.fields:
        meta["managedFields"] = encode(managed)
    return obj


def update(live: Obj | None, new: Obj, write: Write) -> Obj:
    """Any write but an apply (create, update, merge or JSON patch): ``new`` with its managedFields.

    The manager takes every field the write changed, from whoever owned it; a write that changes
    nothing leaves the managers as they were. A client may replace managedFields (``[{}]`` clears them,
    and the object stays without until an apply)."""
    managed = _managers_of(live or {}, new)
    # Only the metadata gets a new field (managedFields): the rest is `new`'s, shared, never changed here.
    result = {**new, "metadata": dict(new.get("metadata") or {})}
    diff = compare(live or {}, new).without(write.ignored)
    # An existing object nobody manages (cleared, or made before tracking) stays untracked until applied.
    tracked = live is None or bool(managed.fields) or not live.get("metadata", {}).get("uid")
    if tracked and (diff.changed() or diff.removed):
        me = Manager(write.manager, UPDATE, write.subresource, write.api_version)
        _settle(managed, me, diff, force=True)
        mine = managed.fields.get(me, set()) - diff.removed
        managed.fields[me] = mine | diff.changed()
        managed.versions[me], managed.times[me] = write.api_version, write.now
    return _with_managed(result, managed)


def _managers_of(live: Obj, new: Obj) -> Managed:
    sent = new.get("metadata", {}).get("managedFields")
    if sent and sent != live.get("metadata", {}).get("managedFields"):
        return decode(new, stored=False)  # the client reset them: encoded again
    return decode(live)


def apply(live: Obj, applied: Obj, write: Write, *, force: bool) -> Obj:
    """A server-side apply of ``applied`` by ``write.manager`` to ``live`` (``{}`` when creating): the new
    object with its managedFields, or :class:`ApplyConflict`.

    A re-apply of the same object returns ``live`` unchanged (same managedFields and times)."""
    managed = decode(live)
    before = dict(managed.times)
    if live.get("metadata", {}).get("uid") and not managed.fields:
        managed = decode(update({}, live, Write(BEFORE_FIRST_APPLY, write.api_version, write.now)))
    me = Manager(write.manager, APPLY, write.subresource)
    last = managed.fields.get(me, set())
    mine = {p for p in field_set(applied) if not write.ignored(p)}
    managed.fields[me], managed.versions[me] = mine, write.api_version
    merged = merge(without_managed_fields(live), applied)
    owned = managed.owned()
    dropped = {p for p in last - owned if not any(o[: len(p)] == p for o in owned)}
    removed = {p for p in dropped if not write.ignored(p)}
    result = remove(merged, removed) if removed else merged
    _settle_apply(managed, me, live, result, write, force)
    _keep_last_applied(live, applied, write, result)
    changed = without_managed_fields(result) != without_managed_fields(live)
    # The entry's time moves only when the apply changed the object (or the entry is new).
    managed.times[me] = write.now if changed or me not in before else before[me]
    return _with_managed(result, managed)


def _settle_apply(managed: Managed, me: Manager, live: Obj, result: Obj, write: Write, force: bool) -> None:
    """`_settle` for an apply, whose conflicts kubectl may take over from its client-side apply. With no
    other manager nobody can conflict or lose a field: the walk over both objects is spared (a creation,
    a re-apply by the only manager)."""
    if all(manager == me for manager in managed.fields):
        return
    diff = compare(live, result).without(write.ignored)
    try:
        _settle(managed, me, diff, force)
    except ApplyConflict as conflict:
        if not _client_side_applied(live, write, conflict):
            raise
        _settle(managed, me, diff, force=True)


# kubectl's client-side apply keeps what it applied in this annotation. The API server lets kubectl's
# server-side apply (manager "kubectl") take the fields listed there without conflicts, and keeps the
# annotation up to date: the docs' path from client-side to server-side apply.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL = "kubectl"


def _last_applied(obj: Obj) -> Any:
    return (obj.get("metadata", {}).get("annotations") or {}).get(LAST_APPLIED)


def _client_side_applied(live: Obj, write: Write, conflict: ApplyConflict) -> bool:
    """Whether every conflicting field is one kubectl's client-side apply set (and kubectl applies)."""
    text = _last_applied(live)
    if write.manager != KUBECTL or not isinstance(text, str):
        return False
    try:
        listed = field_set(json.loads(text))
    except (ValueError, AttributeError):
        return False
    return all(path in listed for _, path in conflict.conflicts)


def _keep_last_applied(live: Obj, applied: Obj, write: Write, result: Obj) -> None:
    if write.manager != KUBECTL or _last_applied(live) is None:
        return
    config = json_copy(applied)
    (config.get("metadata", {}).get("annotations") or {}).pop(LAST_APPLIED, None)
    # A new annotations map: the result may share the live object's (`merge` copies only what it applies).
    annotations = {**(result["metadata"].get("annotations") or {})}
    annotations[LAST_APPLIED] = json.dumps(config, separators=(",", ":"))
    result["metadata"]["annotations"] = annotations
