"""Label and field selectors for the emulator's LIST and WATCH (kmock 0.8 ignores both).

Only the equality-based label syntax (``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``) and the
``metadata.name`` / ``metadata.namespace`` field selectors are supported. Anything else raises
:class:`UnsupportedSelector` so that a test fails loudly instead of silently matching everything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Mapping[str, Any]], bool]


class UnsupportedSelector(ValueError):
    """A selector the emulator cannot evaluate (set-based labels, other fields)."""


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _label_term(term: str) -> Predicate:
    if any(word in term for word in (" in ", " notin ", "(")):
        raise UnsupportedSelector(f"set-based label selector {term!r} is not emulated")
    if "!=" in term:
        key, value = (s.strip() for s in term.split("!=", 1))
        return lambda obj: _labels(obj).get(key) != value
    if "=" in term:
        key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
        return lambda obj: _labels(obj).get(key) == value
    if term.startswith("!"):
        return lambda obj: term[1:].strip() not in _labels(obj)
    return lambda obj: term in _labels(obj)


_FIELDS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "metadata.name": lambda obj: obj.get("metadata", {}).get("name"),
    "metadata.namespace": lambda obj: obj.get("metadata", {}).get("namespace"),
}


def _field_term(term: str) -> Predicate:
    negate = "!=" in term
    field, value = (s.strip() for s in term.replace("!=", "=").replace("==", "=").split("=", 1))
    if field not in _FIELDS:
        raise UnsupportedSelector(f"field selector on {field!r} is not emulated")
    getter = _FIELDS[field]
    return lambda obj: (getter(obj) == value) != negate


def compile_selectors(params: Mapping[str, str]) -> Predicate:
    """Build one predicate from a request's ``labelSelector`` and ``fieldSelector`` query parameters."""
    terms: list[Predicate] = []
    for raw in filter(None, params.get("labelSelector", "").split(",")):
        terms.append(_label_term(raw.strip()))
    for raw in filter(None, params.get("fieldSelector", "").split(",")):
        terms.append(_field_term(raw.strip()))
    return lambda obj: all(term(obj) for term in terms)
