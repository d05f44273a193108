"""The object as the API server stores it: nulls pruned, then defaults applied, before validation.

From the API server's structural-schema defaulting (`PruneNonNullableNullsWithoutDefaults`, then
`Default`): a null in an object field that is neither nullable nor defaulted is removed, a null or
missing field with a default gets the default. Null list items stay (and fail validation). An optional
block left empty in YAML (`probe:`) is therefore the same as no block at all.
"""

from __future__ import annotations

import copy
from typing import Any


def admitted(schema: dict[str, Any], value: Any) -> Any:
    """A copy of `value` pruned and defaulted by `schema` (an openAPIV3Schema)."""
    value = copy.deepcopy(value)
    _prune_nulls(schema, value)
    _default(schema, value)
    return value


def _field_schema(schema: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    if schema is None:
        return None
    properties = schema.get("properties", {})
    if name in properties:
        sub: dict[str, Any] = properties[name]
        return sub
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _prune_nulls(schema: dict[str, Any] | None, value: Any) -> None:
    if isinstance(value, dict):
        for name in list(value):
            sub = _field_schema(schema, name)
            if value[name] is None and sub is not None and not sub.get("nullable") and "default" not in sub:
                del value[name]
            else:
                _prune_nulls(sub, value[name])
    elif isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        for item in value:
            _prune_nulls(items, item)


def _default(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        for name, sub in properties.items():
            missing = name not in value or (value[name] is None and not sub.get("nullable"))
            if "default" in sub and missing:
                value[name] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                _default(properties[name], item)
            elif isinstance(extra, dict):
                _default(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(schema["items"], item)
