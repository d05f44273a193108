"""Offline validation of manifests, layer by layer as a cluster would apply them.

0. decoding — YAML read as kubectl reads it (`yamljson`, `documents`): duplicate keys, `kind: List`;
1. identity — is it ours, or a near miss of ours (`identity`);
2. admission — nulls pruned and defaults applied, as the API server stores the object (`admission`);
3. metadata and schema — ObjectMeta rules and the generated CRD schema, as the API server checks;
4. cel — the CRD's CEL rules on the admitted object, as the API server checks;
5. secret — credentials anywhere in the document;
6. semantic — the models' own checks (SQL grammar, inline secrets), as the operator checks, the
   installer's pod policy (`pod_policy`, read from `FEDERATOR_ALLOWED_*` as the operator reads it) and
   the endpoint hosts of its credential scope (`credential_scope`);
7. warnings — admitted and run, but most likely not what was meant (`warnings`), and connections and
   Azure Resource Manager credentials the operator would not sign in to with its own identity in the
   manifest's namespace (`credential_scope`: a warning, since the installer's values decide; it names the
   chart value that would allow it). A ServiceAccount credential of another namespace than the manifest's
   is a problem (the operator refuses it wherever it runs), as is one the installer's list of credential
   ServiceAccounts does not allow in the manifest's namespace (read as the pod policy is); each is a
   warning when the manifest names no namespace.

Every problem is reported once, at its field path, in the order of the document.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from federator.settings import OperatorSettings
from federator.validation.admission import admitted
from federator.validation.cel import cel_problems
from federator.validation.credential_scope import ScopeFinding, cross_namespace_accounts, operator_scope
from federator.validation.documents import Document, ManifestError, load_documents
from federator.validation.identity import identify
from federator.validation.metadata import metadata_problems
from federator.validation.pod_policy import PodPolicy
from federator.validation.problems import Layer, Problem, join_path, withheld
from federator.validation.schema import crd_schema, schema_problems
from federator.validation.secrets import inline_secret_message, secret_findings
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.connections import SPEC_TYPES
from federator_contract.api.kinds import Kind

__all__ = [
    "Outcome",
    "Problem",
    "Verdict",
    "check_document",
    "check_object",
    "validate_files",
    "validate_object",
]


@dataclass
class Verdict:
    """What validation says of one object."""

    kind: Kind | None
    """The Federator kind; None for another project's document (no problems) or a near miss (problems)."""
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    admitted: dict[str, Any] | None = None
    """The object as the API server would store it (nulls pruned, defaults applied), when it is valid."""

    @property
    def ours(self) -> bool:
        return self.kind is not None or bool(self.problems)


@dataclass
class Outcome:
    """The validation of one document: its problems, or why it was not checked."""

    label: str
    problems: list[Problem] = field(default_factory=list)
    skipped: str | None = None
    warnings: list[Problem] = field(default_factory=list)
    document: Document | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


@functools.cache
def pod_policy() -> PodPolicy:
    """The pod policy the operator would enforce: its settings from this environment, as in its pod."""
    return PodPolicy.from_settings(OperatorSettings.from_env())


def check_object(obj: Any, old: Any = None) -> Verdict:
    """Every problem and warning of one manifest. `old` enables transition rules (immutable fields)."""
    if not isinstance(obj, dict):
        return Verdict(
            None, [Problem("", f"a manifest must be a mapping, not {type(obj).__name__}", "schema")]
        )
    kind, problems = identify(obj)
    if kind is None:
        return Verdict(None, problems)
    schema = crd_schema(kind)
    stored = admitted(schema, obj)
    found = metadata_problems(stored.get("metadata")) + schema_problems(kind, stored)
    refused = frozenset(p.path for p in found)
    found += cel_problems(schema, stored, admitted(schema, old) if isinstance(old, dict) else None, refused)
    found += [
        Problem(join_path(path), inline_secret_message(shape), "secret")
        for path, shape in secret_findings(obj)
    ]
    spec = stored.get("spec")
    if isinstance(spec, dict):
        # A path the API server already refuses needs no second opinion from the operator's checks.
        refused = frozenset(p.path for p in found)
        semantic = semantic_problems(kind, spec, pod_policy(), operator_scope())
        found += [p for p in semantic if not _overlaps(p.path, refused)]
        if isinstance(namespace := _namespace(stored), str):
            found += _account_problems(kind, spec, namespace)
    problems = in_document_order(_once([withheld(p) for p in found]), obj)
    # Warnings are about what would run: a refused object has its problems to fix first.
    warnings = [] if problems else in_document_order(_warnings(kind, stored), obj)
    return Verdict(kind, problems, warnings, None if problems else stored)


def _warnings(kind: Kind, stored: dict[str, Any]) -> list[Problem]:
    """The spec's slips, and the connections and ARM credentials the operator would not sign in to with
    its own identity in the manifest's namespace (a warning: the namespace it is applied in decides)."""
    spec = stored.get("spec")
    found = spec_warnings(kind, spec)
    try:
        model = kind.spec.model_validate(spec)
    except ValidationError:
        return found  # its problems come first
    if isinstance(model, SPEC_TYPES):
        namespace = _namespace(stored)
        scope = operator_scope()
        findings = scope.identity_findings(model, namespace) + scope.arm_findings(model, namespace)
        if namespace is None:  # with a namespace, a problem (check_object)
            findings += cross_namespace_accounts(model, None) + scope.account_findings(model, None)
        found += [Problem(f.field_path, f.message, "warning") for f in findings]
    return found


def _namespace(stored: dict[str, Any]) -> str | None:
    metadata = stored.get("metadata")  # any shape: its problems are reported by the metadata layer
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else None


def _account_problems(kind: Kind, spec: dict[str, Any], namespace: str) -> list[Problem]:
    """The ServiceAccount credentials the operator refuses in `namespace`: another namespace's (wherever it
    runs), and those the installer's list does not allow (its values, read as the pod policy's are)."""
    try:
        model = kind.spec.model_validate(spec)
    except ValidationError:
        return []  # the semantic layer reports it
    if not isinstance(model, SPEC_TYPES):
        return []
    return [
        *_as_problems(cross_namespace_accounts(model, namespace), "semantic"),
        *_as_problems(operator_scope().account_findings(model, namespace), "policy"),
    ]


def _as_problems(findings: list[ScopeFinding], layer: Layer) -> list[Problem]:
    return [Problem(f.field_path, f.message, layer) for f in findings]


def validate_object(obj: Any, old: Any = None) -> tuple[Kind | None, list[Problem]]:
    """The kind and every problem of one manifest (`check_object` without warnings)."""
    verdict = check_object(obj, old)
    return verdict.kind, verdict.problems


def check_document(doc: Document) -> Verdict:
    """A document's verdict, with what kubectl refuses while decoding it. A document of another project
    that kubectl cannot decode is refused too: `kubectl apply` stops at it."""
    verdict = check_object(doc.body)
    if doc.problems:
        verdict.problems = in_document_order(_once([*doc.problems, *verdict.problems]), doc.body)
        verdict.admitted = None
    return verdict


def _overlaps(path: str, refused: frozenset[str]) -> bool:
    return any(
        r == path or path.startswith((f"{r}.", f"{r}[")) or r.startswith((f"{path}.", f"{path}["))
        for r in refused
    )


def _once(problems: list[Problem]) -> list[Problem]:
    # One message per path and text, first layer wins (schema before cel before semantic).
    seen: set[tuple[str, str]] = set()
    out = []
    for p in problems:
        if (p.path, p.message) not in seen:
            seen.add((p.path, p.message))
            out.append(p)
    return out


def in_document_order(problems: list[Problem], obj: Any) -> list[Problem]:
    """`problems` sorted by where their field is in `obj` (a missing field: where its parent is); ties
    keep their order (the layers' order)."""
    positions: dict[str, int] = {}
    _positions(obj, [], positions)

    def position(path: str) -> int:
        while path not in positions and path:
            cut = max(path.rfind("."), path.rfind("["))
            path = path[: max(cut, 0)]
        return positions.get(path, 0)

    return sorted(problems, key=lambda p: position(p.path))


def _positions(value: Any, path: list[str | int], out: dict[str, int]) -> None:
    out.setdefault(join_path(path), len(out))
    if isinstance(value, dict):
        for key, item in value.items():
            _positions(item, [*path, str(key)], out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _positions(item, [*path, i], out)


def validate_files(paths: Iterable[Path]) -> list[Outcome]:
    """One outcome per document of every file; other projects' documents are skipped, not failed."""
    outcomes: list[Outcome] = []
    for path in paths:
        try:
            documents = list(load_documents(path))
        except ManifestError as err:
            outcomes.append(Outcome(str(path), [Problem("", str(err), "yaml")]))
            continue
        outcomes += [validate_document(doc) for doc in documents]
    return outcomes


def validate_document(doc: Document) -> Outcome:
    verdict = check_document(doc)
    if not verdict.ours and not verdict.problems:
        return Outcome(doc.label, skipped="not a federator.io resource", document=doc)
    return Outcome(doc.label, verdict.problems, warnings=verdict.warnings, document=doc)
