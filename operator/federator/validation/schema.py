"""The API server's structural checks, offline: the generated CRD schema through `jsonschema`.

The CRD schema is converted the way the API server reads it: unknown fields are refused (strict field
validation, kubectl's default), defaults are applied before CEL rules run, list-maps have unique keys.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any, cast

import jsonschema
from jsonschema import Draft202012Validator, FormatChecker

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


@cache
def _validator(kind: Kind) -> Draft202012Validator:
    return Draft202012Validator(crd_root_json_schema(crd_schema(kind)), format_checker=FormatChecker())


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


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """A copy of `value` with the schema's defaults filled in, as the API server does before CEL runs."""
    value = copy.deepcopy(value)
    _fill(schema, value)
    return value


def _fill(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _fill(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                _fill(extra, item)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            _fill(schema["items"], item)


def schema_problems(kind: Kind, obj: dict[str, Any]) -> list[Problem]:
    """Every structural problem of the object, each at its field path."""
    problems = [_describe(err) for err in _validator(kind).iter_errors(obj)]
    problems += _duplicate_list_keys(crd_schema(kind), obj, [])
    return sorted(set(problems))


def _describe(err: jsonschema.ValidationError) -> Problem:
    path = list(err.absolute_path)
    value = err.instance
    match err.validator:
        case "required":
            missing = str(err.message).split("'")[1]
            return Problem(join_path([*path, missing]), "required field is missing", "schema")
        case "additionalProperties":
            allowed = set(err.schema.get("properties", {})) if isinstance(err.schema, dict) else set()
            extra = sorted(set(value) - allowed) if isinstance(value, dict) else []
            name = extra[0] if extra else "?"
            if name.lower() in _INLINE_SECRET_FIELDS:
                message = "inline secrets are not accepted: reference a Secret (secretRef) instead"
            else:
                message = "unknown field" + (f" (known: {', '.join(sorted(allowed))})" if allowed else "")
            return Problem(join_path([*path, name]), message, "schema")
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
            if keys and isinstance(item, dict):
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key, strict=True))
                    problems.append(Problem(join_path([*path, i]), f"duplicate entry ({shown})", "schema"))
                seen.setdefault(key, i)
            problems += _duplicate_list_keys(schema["items"], item, [*path, i])
    return problems
