"""The API server's structural checks, offline: the generated CRD schema through `jsonschema`.

The CRD schema is converted the way the API server reads it: unknown fields are refused (strict field
validation, kubectl's default), patterns match as Go's RE2 matches them, list-maps have unique keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any, cast

import jsonschema
from jsonschema import Draft202012Validator, FormatChecker, validators

from federator.crds.generate import crd
from federator.validation.problems import Problem, join_path
from federator.validation.secrets import secret_shape, shown
from federator_contract.api.kinds import Kind

_INLINE_SECRET_FIELDS = {
    "connectionstring",
    "password",
    "sharedaccesskey",
    "saskey",
    "clientsecret",
    "accountkey",
    "sastoken",
    "token",
}


@cache
def crd_schema(kind: Kind) -> dict[str, Any]:
    """The openAPIV3Schema of the kind's CRD."""
    schema: dict[str, Any] = crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _go_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    if isinstance(instance, str) and go_regex(pattern).search(instance) is None:
        yield jsonschema.ValidationError(f"does not match {pattern!r}")


# The API server matches patterns with Go's RE2: `\w`, `\d`, `\s` are ASCII and `$` is the end of the text
# (Python's `$` also matches before a final newline: `"orders\n"` would pass).
_Validator = validators.extend(Draft202012Validator, {"pattern": _go_pattern})  # type: ignore[no-untyped-call]


@cache
def go_regex(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled as RE2 reads it: `$` ends the text, word, digit and space classes are ASCII."""
    out, escaped, in_class = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        out.append(char)
    return re.compile("".join(out), re.ASCII)


@cache
def _validator(kind: Kind) -> Draft202012Validator:
    validator: Draft202012Validator = _Validator(
        crd_root_json_schema(crd_schema(kind)), format_checker=FormatChecker()
    )
    return validator


def crd_root_json_schema(root: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a whole custom object: the API server accepts `apiVersion`, `kind` and
    `metadata` at the root whether or not the CRD's schema declares them."""
    implicit = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
    declared = root.get("properties", {})
    return openapi_to_json_schema({**root, "properties": {**implicit, **declared}})


def openapi_to_json_schema(node: dict[str, Any]) -> dict[str, Any]:
    """A CRD's OpenAPI v3 schema as JSON Schema with the API server's semantics: unknown fields refused
    unless preserved, `nullable` and int-or-string spelled out, Kubernetes extensions dropped."""
    out = {
        k: v
        for k, v in node.items()
        if not k.startswith("x-kubernetes-") and k not in ("default", "nullable")
    }
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if "properties" in node:
        out["properties"] = {name: openapi_to_json_schema(sub) for name, sub in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = openapi_to_json_schema(node["additionalProperties"])
    if "items" in node:
        out["items"] = openapi_to_json_schema(node["items"])
    for combinator in ("allOf", "anyOf", "oneOf"):
        if combinator in node:
            out[combinator] = [openapi_to_json_schema(sub) for sub in node[combinator]]
    return out


def schema_problems(kind: Kind, obj: dict[str, Any]) -> list[Problem]:
    """Every structural problem of the object, each at its field path (in no particular order)."""
    problems = [p for err in _validator(kind).iter_errors(obj) for p in _describe(err)]
    problems += _duplicate_list_keys(crd_schema(kind), obj, [])
    return list(dict.fromkeys(problems))


def _unknown_fields(err: jsonschema.ValidationError, path: list[str | int]) -> list[Problem]:
    """One problem per unknown field of the object, in the object's order (kubectl names them all)."""
    allowed = set(err.schema.get("properties", {})) if isinstance(err.schema, dict) else set()
    extra = [name for name in err.instance if name not in allowed] if isinstance(err.instance, dict) else []
    known = f" (known: {', '.join(sorted(allowed))})" if allowed else ""
    problems = []
    for name in extra:
        if name.lower() in _INLINE_SECRET_FIELDS:
            message = "inline secrets are not accepted: reference a Secret (secretRef) instead"
        else:
            message = "unknown field" + known
        problems.append(Problem(join_path([*path, name]), message, "schema"))
    return problems


def _describe(err: jsonschema.ValidationError) -> list[Problem]:
    if err.validator == "additionalProperties":
        return _unknown_fields(err, list(err.absolute_path))
    return [_describe_one(err)]


def _describe_one(err: jsonschema.ValidationError) -> Problem:
    path = list(err.absolute_path)
    value = err.instance
    match err.validator:
        case "required":
            missing = str(err.message).split("'")[1]
            return Problem(join_path([*path, missing]), "required field is missing", "schema")
        case "enum":
            options = ", ".join(str(o) for o in cast(list[Any], err.validator_value))
            return Problem(join_path(path), f"must be one of: {options} (got {shown(value)})", "schema")
        case "type":
            return Problem(
                join_path(path),
                f"must be of type {err.validator_value} (got {type(value).__name__} {shown(value)})",
                "schema",
            )
        case "pattern":
            return Problem(
                join_path(path), f"{shown(value)} does not match the pattern {err.validator_value}", "schema"
            )
        case "format":
            return Problem(
                join_path(path), f"{shown(value)} is not a valid {err.validator_value} (RFC 3339)", "schema"
            )
        case "minimum" | "maximum":
            word = "at least" if err.validator == "minimum" else "at most"
            return Problem(
                join_path(path), f"must be {word} {err.validator_value} (got {shown(value)})", "schema"
            )
        case "minItems" | "maxItems":
            word = "at least" if err.validator == "minItems" else "at most"
            return Problem(join_path(path), f"must have {word} {err.validator_value} items", "schema")
        case "minLength" | "maxLength":
            word = "at least" if err.validator == "minLength" else "at most"
            return Problem(join_path(path), f"must have {word} {err.validator_value} characters", "schema")
        case _:
            # jsonschema's own wording repeats the value: only use it when the value is not a credential.
            message = err.message if secret_shape(value) is None else f"invalid value {shown(value)}"
            return Problem(join_path(path), message, "schema")


def _duplicate_list_keys(schema: dict[str, Any], value: Any, path: list[str | int]) -> list[Problem]:
    problems: list[Problem] = []
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                problems += _duplicate_list_keys(sub, value[name], [*path, name])
    elif isinstance(value, list) and "items" in schema:
        keys = schema.get("x-kubernetes-list-map-keys")
        seen: dict[tuple[Any, ...], int] = {}
        for i, item in enumerate(value):
            key = tuple(item.get(k) for k in keys) if keys and isinstance(item, dict) else None
            # A key of the wrong type is the schema's to refuse.
            if (
                keys
                and key is not None
                and all(isinstance(part, str | int | float | bool | None) for part in key)
            ):
                if key in seen:
                    named = ", ".join(f"{k}={shown(v)}" for k, v in zip(keys, key, strict=True))
                    problems.append(Problem(join_path([*path, i]), f"duplicate entry ({named})", "schema"))
                seen.setdefault(key, i)
            problems += _duplicate_list_keys(schema["items"], item, [*path, i])
    return problems
