"""The regular expressions of a JSON Schema, matched in linear time: the `validate` editor's validator.

`jsonschema` matches `pattern`, `patternProperties` (and, through them, `additionalProperties`) with
Python's `re`, which backtracks: a schema's `^(\\w+\\s?)*$` against a 30-character body field that
almost matches takes minutes, and a task's schema meets whatever its source's senders put in events.
Here those keywords match with RE2 (`google-re2`, the engine Kubernetes uses for CRD patterns): time
linear in the text, and a compiled pattern bounded in memory (``MAX_PATTERN_MEMORY``; a bigger one does
not compile). RE2 has no backreferences or lookaround: a schema that uses them is refused when it is
checked (`regex_problem`), naming where, and so is `unevaluatedProperties` beside `patternProperties`,
whose evaluation `jsonschema` does not let another engine take over.

`jsonschema` and `re2` are the contract's optional `checks` dependencies: imported when used.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

MAX_PATTERN_MEMORY = 8 << 20
"""Bytes RE2 may use for one compiled pattern (its default, stated: the bound is part of the contract)."""

# Keywords whose value is a subschema, a list of them, or a name → subschema map (draft 2020-12).
_SUBSCHEMA = {
    "additionalProperties", "unevaluatedProperties", "propertyNames", "items", "contains",
    "unevaluatedItems", "not", "if", "then", "else",
}
_SUBSCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SUBSCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}


class RegexError(ValueError):
    """A pattern RE2 cannot compile (or not within ``MAX_PATTERN_MEMORY``)."""


@functools.lru_cache(maxsize=512)
def linear_regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (a `re2._Regexp`); RegexError says why not."""
    import re2  # type: ignore[import-untyped]  # an optional dependency, without type hints

    options = re2.Options()
    options.max_mem = MAX_PATTERN_MEMORY
    options.log_errors = False  # the error is raised, not also written to stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        raise RegexError(f"RE2 cannot compile {pattern!r}: {reason}") from None


def regex_problem(schema: Any) -> str | None:
    """Why the schema's regular expressions cannot be matched in linear time, or None."""
    combined = False
    for path, node in _subschemas(schema, "$"):
        for where, pattern in _patterns(node, path):
            try:
                linear_regex(pattern)
            except RegexError as error:
                return f"invalid JSON Schema at {where}: {error} (no backreferences or lookaround)"
        combined = combined or "patternProperties" in node
    if combined and any("unevaluatedProperties" in node for _, node in _subschemas(schema, "$")):
        return (
            "unevaluatedProperties cannot be used with patternProperties: their patterns would be matched "
            "by a backtracking engine (list the properties, or use additionalProperties)"
        )
    return None


def json_schema_validator(schema: Mapping[str, Any]) -> Validator:
    """A draft 2020-12 validator of ``schema`` (checked with `regex_problem`) whose regexes are RE2's."""
    validator: Validator = _linear_validator_class()(schema)
    return validator


@functools.cache
def _linear_validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    additional = Draft202012Validator.VALIDATORS["additionalProperties"]

    def pattern(validator: Any, regex: str, instance: Any, schema: Any) -> Iterator[Any]:
        from jsonschema.exceptions import ValidationError

        if validator.is_type(instance, "string") and linear_regex(regex).search(instance) is None:
            yield ValidationError(f"{instance!r} does not match {regex!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in patterns.items():
            for key, value in instance.items():
                if linear_regex(regex).search(key) is not None:
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)

    def additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # jsonschema leaves out the names patternProperties match with `re`: RE2 does it here (and says
        # what jsonschema says of the others).
        patterns = schema.get("patternProperties") if validator.is_type(instance, "object") else None
        if not patterns:
            yield from additional(validator, allowed, instance, schema)
            return
        regexes = [linear_regex(p) for p in patterns]
        properties = schema.get("properties", {})
        unmatched = {
            k: v for k, v in instance.items() if k not in properties and not any(r.search(k) for r in regexes)
        }
        if validator.is_type(allowed, "object"):
            for name, value in unmatched.items():
                yield from validator.descend(value, allowed, path=name)
        elif not allowed and unmatched:
            from jsonschema.exceptions import ValidationError

            names = ", ".join(repr(name) for name in sorted(unmatched))
            verb = "does" if len(unmatched) == 1 else "do"
            regexes_named = ", ".join(repr(p) for p in sorted(patterns))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {regexes_named}")

    linear = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
    }
    return validators.extend(Draft202012Validator, linear)  # type: ignore[no-untyped-call]


def _subschemas(node: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every (sub)schema object of ``node`` with its JSON path: data (`const`, `enum`, ...) is not one."""
    if not isinstance(node, Mapping):
        return
    yield path, node
    for keyword, value in node.items():
        here = f"{path}.{keyword}"
        if keyword in _SUBSCHEMA:
            yield from _subschemas(value, here)
        elif keyword in _SUBSCHEMA_LISTS and isinstance(value, list):
            for i, item in enumerate(value):
                yield from _subschemas(item, f"{here}[{i}]")
        elif keyword in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            for name, item in value.items():
                yield from _subschemas(item, _child(here, str(name)))


def _child(path: str, name: str) -> str:
    """A member's JSON path as `jsonschema` writes one: `.name`, or `['name']` when it is no identifier."""
    return f"{path}.{name}" if name.isidentifier() else f"{path}[{name!r}]"


def _patterns(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """The regexes one schema object holds itself: its `pattern` and its `patternProperties` names."""
    if isinstance(node.get("pattern"), str):
        yield f"{path}.pattern", node["pattern"]
    names = node.get("patternProperties")
    if isinstance(names, Mapping):
        yield from ((f"{path}.patternProperties", str(name)) for name in names)
