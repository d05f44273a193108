"""The CRD's CEL rules (`x-kubernetes-validations`), evaluated offline with cel-python.

Rules run on the admitted (pruned, defaulted) object, node by node, as the API server runs them.
Transition rules (those using `oldSelf`) run only when a previous version of the object is given. A rule
that cannot be evaluated (`no such key`) is a problem, as the API server reports it, unless the schema
layer already refused something in that node: a value of the wrong shape is the schema's to report.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from federator.validation.problems import Problem, join_path
from federator.validation.secrets import secret_shape

_ENV = celpy.Environment()


@cache
def _program(rule: str) -> Any:
    return _ENV.program(_ENV.compile(rule))


def cel_problems(
    schema: dict[str, Any], value: Any, old: Any = None, refused: frozenset[str] = frozenset()
) -> list[Problem]:
    """Problems from every CEL rule in `schema` that fails on `value` (and `old`, for transition rules).
    `refused`: paths the schema layer found problems at."""
    problems: list[Problem] = []
    _Walk(refused, problems).node(schema, value, old, [])
    return list(dict.fromkeys(problems))


class _Walk:
    def __init__(self, refused: frozenset[str], out: list[Problem]) -> None:
        self.refused = refused
        self.out = out

    def node(self, schema: dict[str, Any], value: Any, old: Any, path: list[str | int]) -> None:
        if not _typed(schema, value):
            return  # the API server runs no rule on a value of the wrong type (the schema refuses it)
        here = join_path(path)
        for rule in schema.get("x-kubernetes-validations", []):
            failure = _check(rule, value, old)
            if failure is None or (failure.unevaluated and self.shape_refused(here)):
                continue
            field_path = rule.get("fieldPath", "")
            self.out.append(Problem((here + field_path).lstrip("."), failure.message, "cel"))
        self.children(schema, value, old, path)

    def shape_refused(self, here: str) -> bool:
        return any(
            not here or r == here or r.startswith((f"{here}.", f"{here}[")) or here.startswith(f"{r}.")
            for r in self.refused
        )

    def children(self, schema: dict[str, Any], value: Any, old: Any, path: list[str | int]) -> None:
        if isinstance(value, dict):
            for name, sub in schema.get("properties", {}).items():
                if name in value:
                    prior = old.get(name) if isinstance(old, dict) else None
                    self.node(sub, value[name], prior, [*path, name])
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for key, item in value.items():
                    prior = old.get(key) if isinstance(old, dict) else None
                    self.node(extra, item, prior, [*path, key])
        elif isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                # Like the API server, list items are matched to their previous version only in list-maps.
                prior = _previous_item(schema, item, old)
                self.node(schema["items"], item, prior, [*path, i])


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _typed(schema: dict[str, Any], value: Any) -> bool:
    wanted = _JSON_TYPES.get(schema.get("type", ""))
    if wanted is None:
        return value is not None
    return isinstance(value, wanted) and (bool in wanted or not isinstance(value, bool))


def _previous_item(schema: dict[str, Any], item: Any, old: Any) -> Any:
    keys = schema.get("x-kubernetes-list-map-keys")
    if not keys or not isinstance(old, list) or not isinstance(item, dict):
        return None
    for candidate in old:
        if isinstance(candidate, dict) and all(candidate.get(k) == item.get(k) for k in keys):
            return candidate
    return None


@dataclass(frozen=True)
class _Failure:
    message: str
    unevaluated: bool = False


def _check(rule: dict[str, str], value: Any, old: Any) -> _Failure | None:
    """How the rule fails, None if it holds or does not apply."""
    text = rule["rule"]
    message = rule.get("message", f"failed rule: {text}")
    if "oldSelf" in text and old is None:
        return None
    try:
        activation = {"self": json_to_cel(value)}
        if "oldSelf" in text:
            activation["oldSelf"] = json_to_cel(old)
        result = _program(text).evaluate(activation)
    except Exception as error:  # cel-python raises more than CELEvalError on unexpected shapes
        return _Failure(f"{message} (the rule could not be evaluated: {_reason(error)})", unevaluated=True)
    if isinstance(result, CELEvalError):
        return _Failure(f"{message} (the rule could not be evaluated: {_reason(result)})", unevaluated=True)
    return None if bool(result) else _Failure(message)


def _reason(error: BaseException | CELEvalError) -> str:
    # cel-python's errors carry a tuple of arguments; the first is the message.
    args = getattr(error, "args", ())
    text = str(args[0]) if args else type(error).__name__
    return "<redacted>" if secret_shape(text) else text
