"""Offline validation of manifests, layer by layer as a cluster would apply them.

1. schema — the generated CRD schema (types, enums, patterns, unknown fields), as the API server checks;
2. cel — the CRD's CEL rules on the defaulted object, as the API server checks;
3. semantic — the models' own checks (SQL grammar, inline secrets), as the operator checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federator.validation.cel import cel_problems
from federator.validation.documents import Document, ManifestError, load_documents
from federator.validation.problems import Problem
from federator.validation.schema import apply_defaults, crd_schema, schema_problems
from federator.validation.semantic import semantic_problems
from federator_contract.api.base import API_VERSION, GROUP
from federator_contract.api.kinds import BY_KIND, Kind

__all__ = ["Outcome", "Problem", "validate_files", "validate_object"]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass
class Outcome:
    """The validation of one document: its problems, or why it was not checked."""

    label: str
    problems: list[Problem] = field(default_factory=list)
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_object(obj: Any, old: Any = None) -> tuple[Kind | None, list[Problem]]:
    """The kind and every problem of one manifest. `old` enables transition rules (immutable fields)."""
    if not isinstance(obj, dict):
        return None, [Problem("", f"a manifest must be a mapping, not {type(obj).__name__}", "schema")]
    kind_name = obj.get("kind")
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or not api_version.startswith(f"{GROUP}/"):
        return None, []
    if api_version != API_VERSION:
        return None, [
            Problem("apiVersion", f"unsupported version {api_version!r}; use {API_VERSION}", "schema")
        ]
    kind = BY_KIND.get(kind_name) if isinstance(kind_name, str) else None
    if kind is None:
        known = ", ".join(sorted(BY_KIND))
        return None, [Problem("kind", f"unknown kind {kind_name!r} in {GROUP} (known: {known})", "schema")]
    problems = _metadata_problems(obj.get("metadata"))
    problems += schema_problems(kind, obj)
    defaulted = apply_defaults(crd_schema(kind), obj)
    problems += cel_problems(
        crd_schema(kind), defaulted, apply_defaults(crd_schema(kind), old) if old else None
    )
    if isinstance(obj.get("spec"), dict):
        # A path the API server already refuses needs no second opinion from the operator's checks.
        refused = {p.path for p in problems}
        problems += [p for p in semantic_problems(kind, obj["spec"]) if p.path not in refused]
    return kind, _dedupe(problems)


def _metadata_problems(meta: Any) -> list[Problem]:
    if not isinstance(meta, dict):
        return [Problem("metadata", "required field is missing", "schema")]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return [Problem("metadata.name", "required field is missing", "schema")]
    if len(name) > 253 or not _NAME.match(name):
        return [Problem("metadata.name", f"{name!r} is not a valid name (lowercase DNS subdomain)", "schema")]
    return []


def _dedupe(problems: list[Problem]) -> list[Problem]:
    # One message per path and text, first layer wins (schema before cel before semantic).
    seen: set[tuple[str, str]] = set()
    out = []
    for p in problems:
        if (p.path, p.message) not in seen:
            seen.add((p.path, p.message))
            out.append(p)
    return out


def validate_files(paths: Iterable[Path]) -> list[Outcome]:
    """One outcome per document of every file; non-Federator documents are skipped, not failed."""
    outcomes: list[Outcome] = []
    for path in paths:
        try:
            documents = list(load_documents(path))
        except ManifestError as err:
            outcomes.append(Outcome(str(path), [Problem("", str(err), "yaml")]))
            continue
        outcomes += [_validate_document(doc) for doc in documents]
    return outcomes


def _validate_document(doc: Document) -> Outcome:
    kind, problems = validate_object(doc.body)
    if kind is None and not problems:
        return Outcome(doc.label, skipped="not a federator.io resource")
    return Outcome(doc.label, problems)
