"""Reading manifests: multi-document YAML files, each document located by file and index."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Document:
    source: str
    index: int
    body: Any

    @property
    def label(self) -> str:
        if isinstance(self.body, dict):
            meta = self.body.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            kind = self.body.get("kind", "?")
            name = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
            return f"{self.source}#{self.index} {kind} {name}"
        return f"{self.source}#{self.index}"


class ManifestError(ValueError):
    """A file that cannot be read as YAML."""


def load_documents(path: Path) -> Iterator[Document]:
    """Every non-empty document of a YAML file. Raises ManifestError for unreadable YAML."""
    try:
        text = path.read_text(encoding="utf-8")
        bodies = list(yaml.safe_load_all(text))
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(f"{path}: cannot read: {err}") from err
    except yaml.YAMLError as err:
        raise ManifestError(f"{path}: not valid YAML: {err}") from err
    index = 0
    for body in bodies:
        if body is None:
            continue
        yield Document(str(path), index, body)
        index += 1
