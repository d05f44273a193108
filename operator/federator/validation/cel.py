"""The CRD's CEL rules (`x-kubernetes-validations`), evaluated offline with cel-python.

Rules run on the defaulted object, node by node, as the API server runs them. Transition rules
(those using `oldSelf`) run only when a previous version of the object is given.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from federator.validation.problems import Problem, join_path

_ENV = celpy.Environment()


@cache
def _program(rule: str) -> Any:
    return _ENV.program(_ENV.compile(rule))


def cel_problems(schema: dict[str, Any], value: Any, old: Any = None) -> list[Problem]:
    """Problems from every CEL rule in `schema` that fails on `value` (and `old`, for transition rules)."""
    problems: list[Problem] = []
    _walk(schema, value, old, [], problems)
    return sorted(set(problems))


def _walk(schema: dict[str, Any], value: Any, old: Any, path: list[str | int], out: list[Problem]) -> None:
    for rule in schema.get("x-kubernetes-validations", []):
        failure = _check(rule, value, old)
        if failure is not None:
            field_path = rule.get("fieldPath", "")
            out.append(Problem((join_path(path) + field_path).lstrip("."), failure, "cel"))
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                prior = old.get(name) if isinstance(old, dict) else None
                _walk(sub, value[name], prior, [*path, name], out)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                prior = old.get(key) if isinstance(old, dict) else None
                _walk(extra, item, prior, [*path, key], out)
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            # Like the API server, list items are matched to their previous version only in list-maps.
            prior = _previous_item(schema, item, old)
            _walk(schema["items"], item, prior, [*path, i], out)


def _previous_item(schema: dict[str, Any], item: Any, old: Any) -> Any:
    keys = schema.get("x-kubernetes-list-map-keys")
    if not keys or not isinstance(old, list) or not isinstance(item, dict):
        return None
    for candidate in old:
        if isinstance(candidate, dict) and all(candidate.get(k) == item.get(k) for k in keys):
            return candidate
    return None


def _check(rule: dict[str, str], value: Any, old: Any) -> str | None:
    """The rule's message if it fails, None if it holds or does not apply."""
    text = rule["rule"]
    activation = {"self": json_to_cel(value)}
    if "oldSelf" in text:
        if old is None:
            return None
        activation["oldSelf"] = json_to_cel(old)
    try:
        result = _program(text).evaluate(activation)
    except CELEvalError:
        # A value of the wrong shape: the schema layer reports it (the API server would not run the rule).
        return None
    if isinstance(result, CELEvalError):
        return None
    return None if bool(result) else rule.get("message", f"failed rule: {text}")
