"""Which documents are Federator resources: those `apiVersion` and `kind` name, and those that look like
one but would not be served (a misspelt group, a missing `apiVersion`, a kind in the wrong group). The
latter are errors with a "did you mean", not documents of another project to skip."""

from __future__ import annotations

import difflib
from typing import Any

from federator.validation.problems import Problem
from federator.validation.secrets import shown
from federator_contract.api.base import API_VERSION, GROUP
from federator_contract.api.kinds import BY_KIND, Kind

_KNOWN = ", ".join(sorted(BY_KIND))


def identify(obj: dict[str, Any]) -> tuple[Kind | None, list[Problem]]:
    """The kind of a Federator resource; no kind and no problem for another project's document."""
    api_version, kind_name = obj.get("apiVersion"), obj.get("kind")
    kind = BY_KIND.get(kind_name) if isinstance(kind_name, str) else None
    # `federator.io` alone (no version) is read as a group, to be told which version to use.
    group = (api_version.rpartition("/")[0] or api_version) if isinstance(api_version, str) else ""
    if api_version == API_VERSION:
        if kind is not None:
            return kind, []
        return None, [_unknown_kind(kind_name)]
    if isinstance(api_version, str) and group == GROUP:
        return None, [_problem("apiVersion", f"unsupported version {shown(api_version)}; use {API_VERSION}")]
    meant = kind or _close_kind(kind_name)
    hint = f"did you mean apiVersion: {API_VERSION}" + (f" and kind: {meant.kind}" if meant else "") + "?"
    if api_version is None and meant is not None:
        return None, [_problem("apiVersion", f"required field is missing; {hint}")]
    if not isinstance(api_version, str):
        return None, [_problem("apiVersion", f"must be a string; {hint}")] if meant else []
    if _close_group(group):
        return None, [_problem("apiVersion", f"unknown API group {shown(group)}; {hint}")]
    if meant is not None and "." not in group:
        # The core and built-in groups (`v1`, `apps/v1`) never serve these kinds; another project's
        # group with a kind of the same name (`dms.services.k8s.aws` has a ReplicationTask) is not ours.
        return None, [_problem("apiVersion", f"{shown(api_version)} does not serve {meant.kind}; {hint}")]
    return None, []


def _unknown_kind(kind_name: Any) -> Problem:
    if kind_name is None:
        return _problem("kind", f"required field is missing (known: {_KNOWN})")
    close = _close_kind(kind_name)
    hint = f"; did you mean {close.kind}?" if close is not None else ""
    return _problem("kind", f"unknown kind {shown(kind_name)} in {GROUP} (known: {_KNOWN}){hint}")


def _close_kind(name: Any) -> Kind | None:
    if not isinstance(name, str):
        return None
    folded = {k.lower(): k for k in BY_KIND}
    found = folded.get(name.lower()) or next(
        iter(difflib.get_close_matches(name, list(BY_KIND), 1, 0.8)), None
    )
    return BY_KIND[found] if found else None


def _close_group(group: str) -> bool:
    return "federator" in group.lower() or bool(difflib.get_close_matches(group.lower(), [GROUP], 1, 0.8))


def _problem(path: str, message: str) -> Problem:
    return Problem(path, message, "schema")
