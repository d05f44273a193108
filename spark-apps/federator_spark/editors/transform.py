"""The `transform` editor: reshapes a JSON object body, in this order: project (keep only the listed
dotted paths), rename (``{old.path: new.path}``), flatten (nested objects → joined names).

Bodies that are not a JSON object are rejected. The input document is never mutated: every step
copies the objects on the paths it changes. The new body is compact JSON (``,``/``:`` separators,
UTF-8, key order kept).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from federator_contract.api.editors import TransformEditor
from federator_spark.editors.base import EditorStep, Rejected, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event, NotJson

Path = tuple[str, ...]
_MISSING: Any = object()


@dataclass(frozen=True)
class TransformStep:
    kind: ClassVar[str] = "transform"
    project: tuple[Path, ...] | None
    rename: tuple[tuple[Path, Path], ...]
    flatten: str | None  # the separator, when flattening

    @classmethod
    def build(cls, spec: TransformEditor) -> TransformStep:
        return cls(
            project=tuple(_path(p) for p in spec.project) if spec.project else None,
            rename=tuple((_path(old), _path(new)) for old, new in (spec.rename or {}).items()),
            flatten=spec.flatten.separator if spec.flatten else None,
        )

    def open(self, scope: TaskScope) -> EditorStep:
        return self

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        try:
            document = event.json()
        except NotJson as error:
            raise Rejected(str(error)) from None
        if not isinstance(document, dict):
            raise Rejected(f"body is a JSON {type(document).__name__}, not an object")
        if self.project is not None:
            document = _project(document, self.project)
        for old, new in self.rename:
            document, value = _take(document, old)
            if value is not _MISSING:
                document = _put(document, new, value)
        if self.flatten is not None:
            document = _flatten(document, self.flatten)
        body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        return event.edited(body=body, document=document)


def _path(text: str) -> Path:
    return tuple(text.split("."))


def _get(document: Any, path: Path) -> Any:
    for segment in path:
        if not isinstance(document, dict) or segment not in document:
            return _MISSING
        document = document[segment]
    return document


def _project(document: dict[str, Any], paths: tuple[Path, ...]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for path in paths:
        value = _get(document, path)
        if value is not _MISSING:
            kept = _put(kept, path, value)
    return kept


def _take(document: dict[str, Any], path: Path) -> tuple[dict[str, Any], Any]:
    """``document`` without ``path`` (a copy when it changes), and the value taken (or _MISSING)."""
    head, rest = path[0], path[1:]
    if head not in document:
        return document, _MISSING
    if not rest:
        copy = dict(document)
        return copy, copy.pop(head)
    child = document[head]
    if not isinstance(child, dict):
        return document, _MISSING
    new_child, value = _take(child, rest)
    if value is _MISSING:
        return document, _MISSING
    return {**document, head: new_child}, value


def _put(document: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A copy of ``document`` with ``value`` at ``path``, creating the objects on the way."""
    head, rest = path[0], path[1:]
    if not rest:
        return {**document, head: value}
    child = document.get(head, {})
    if not isinstance(child, dict):
        raise Rejected(f"cannot write {'.'.join(path)}: {head} is a JSON {type(child).__name__}")
    return {**document, head: _put(child, rest, value)}


def _flatten(document: dict[str, Any], separator: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: dict[str, Any]) -> None:
        for key, value in node.items():
            name = f"{prefix}{separator}{key}" if prefix else key
            if isinstance(value, dict) and value:
                walk(name, value)
            elif name in flat:
                raise Rejected(f"flatten: two fields become {name!r}")
            else:
                flat[name] = value

    walk("", document)
    return flat
