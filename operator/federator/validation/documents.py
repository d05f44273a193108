"""Reading manifests: multi-document YAML files, decoded as kubectl decodes them, `kind: List` expanded,
each document located by file, index (and item, for a list's items)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federator.validation.problems import Problem
from federator.validation.secrets import secret_shape
from federator.validation.yamljson import Decoded, ManifestError, decode_documents

__all__ = ["Document", "ManifestError", "load_documents", "read_documents"]


@dataclass(frozen=True)
class Document:
    source: str
    index: int
    body: Any
    problems: tuple[Problem, ...] = ()
    """What kubectl would refuse while decoding it (duplicate keys, values JSON cannot hold)."""
    lines: dict[str, int] = field(default_factory=dict, compare=False)
    """Field path → line in the file, when the document was read from YAML."""
    item: str | None = None
    """`items[3]` for an item of a `kind: List` document."""

    @property
    def label(self) -> str:
        where = f"{self.source}#{self.index}" + (f" {self.item}" if self.item else "")
        if not isinstance(self.body, dict):
            return where
        meta = self.body.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        name = f"{_plain(meta.get('namespace', 'default'))}/{_plain(meta.get('name', '?'))}"
        return f"{where} {_plain(self.body.get('kind', '?'))} {name}"

    def line_of(self, path: str) -> int | None:
        """The line of `path` or of its nearest enclosing field."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            cut = max(path.rfind("."), path.rfind("["))
            path = path[: max(cut, 0)]


def _plain(value: Any) -> str:
    # A label is printed with every problem: it must not repeat a credential pasted into a name.
    if not isinstance(value, str):
        return "?"
    return "<redacted>" if secret_shape(value) else value


def load_documents(path: Path) -> Iterator[Document]:
    """Every non-empty document of a YAML file. Raises ManifestError for unreadable YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(f"{path}: cannot read: {err}") from err
    try:
        # Decoded whole before the first document is yielded: a broken file yields nothing, as kubectl
        # applies nothing of it.
        documents = list(read_documents(text, str(path)))
    except ManifestError as err:
        raise ManifestError(f"{path}: {err}") from None
    yield from documents


def read_documents(text: str, source: str) -> Iterator[Document]:
    """The documents of a YAML text; a `kind: List` (as `kubectl get -o yaml` writes) yields its items."""
    index = 0
    for decoded in decode_documents(text):
        if decoded.body is None and not decoded.problems:
            continue
        yield from _expand(decoded, source, index)
        index += 1


def _expand(decoded: Decoded, source: str, index: int) -> Iterator[Document]:
    body = decoded.body
    items = body.get("items") if _is_list(body) else None
    if not isinstance(items, list):
        yield Document(source, index, body, tuple(decoded.problems), decoded.lines)
        return
    outside = tuple(p for p in decoded.problems if not _under(p.path, "items"))
    if outside:  # the list itself is refused, e.g. a duplicate key beside `items`
        yield Document(source, index, {k: v for k, v in body.items() if k != "items"}, outside)
    for i, item in enumerate(items):
        prefix = f"items[{i}]"
        yield Document(
            source,
            index,
            item,
            tuple(_within(p, prefix) for p in decoded.problems if _under(p.path, prefix)),
            {_relative(k, prefix): line for k, line in decoded.lines.items() if _under(k, prefix)},
            prefix,
        )


def _is_list(body: Any) -> bool:
    # `List` of core v1 and the typed lists (`ReplicationTaskList`): kubectl applies their items.
    return (
        isinstance(body, dict)
        and isinstance(body.get("kind"), str)
        and body["kind"].endswith("List")
        and "items" in body
    )


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((f"{prefix}.", f"{prefix}["))


def _relative(path: str, prefix: str) -> str:
    return path[len(prefix) :].lstrip(".")


def _within(problem: Problem, prefix: str) -> Problem:
    return Problem(_relative(problem.path, prefix), problem.message, problem.layer)
