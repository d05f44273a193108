"""`metadata` as the API server checks it (ObjectMeta validation), offline.

The CRD cannot describe `metadata`: the API server validates it itself, for every kind alike. Bounds
that a kind's children need (a name that must fit in a label value or a pod name) are CEL rules on the
kind, in the CRD (`Kind.root_rules`).
"""

from __future__ import annotations

import re
from typing import Any

from federator.validation.problems import Problem, join_path
from federator.validation.secrets import shown

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", re.ASCII)
ANNOTATIONS_LIMIT = 256 * 1024  # bytes of keys and values together (TotalAnnotationSizeLimitB)

# ObjectMeta's fields and their JSON types; anything else is an unknown field (kubectl's strict validation).
_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "generateName": (str,),
    "namespace": (str,),
    "selfLink": (str,),
    "uid": (str,),
    "resourceVersion": (str,),
    "generation": (int,),
    "creationTimestamp": (str, type(None)),
    "deletionTimestamp": (str, type(None)),
    "deletionGracePeriodSeconds": (int,),
    "labels": (dict,),
    "annotations": (dict,),
    "ownerReferences": (list,),
    "finalizers": (list,),
    "managedFields": (list,),
}
_TYPE_NAMES = {str: "string", int: "integer", dict: "object", list: "array", type(None): "null"}


def metadata_problems(meta: Any) -> list[Problem]:
    """Every problem of an object's `metadata`, in the order of its fields."""
    if meta is None:
        return [Problem("metadata", "required field is missing", "schema")]
    if not isinstance(meta, dict):
        return [_problem(["metadata"], f"must be of type object (got {type(meta).__name__})")]
    problems: list[Problem] = []
    if meta.get("name") in (None, ""):
        problems.append(_problem(["metadata", "name"], "required field is missing"))
    for key, value in meta.items():
        path: list[str | int] = ["metadata", key]
        if key == "name" and value in (None, ""):
            continue
        types = _FIELDS.get(key)
        if types is None:
            problems.append(_problem(path, f"unknown field (known: {', '.join(sorted(_FIELDS))})"))
        elif not isinstance(value, types) or isinstance(value, bool):
            wanted = " or ".join(_TYPE_NAMES[t] for t in types)
            problems.append(_problem(path, f"must be of type {wanted} (got {type(value).__name__})"))
        else:
            problems += _field_problems(key, value, path)
    return problems


def _field_problems(key: str, value: Any, path: list[str | int]) -> list[Problem]:
    match key:
        case "name" if value:
            return _dns_name(value, path, _DNS_SUBDOMAIN, 253, "a lowercase DNS subdomain")
        case "namespace":
            return _dns_name(value, path, _DNS_LABEL, 63, "a lowercase DNS label")
        case "labels":
            return _string_map(value, path, _label_value)
        case "annotations":
            problems = _string_map(value, path, lambda _value, _path: [])
            size = sum(len(k.encode()) + len(v.encode()) for k, v in value.items() if isinstance(v, str))
            if size > ANNOTATIONS_LIMIT:
                problems.append(
                    _problem(
                        path, f"total size {size} bytes exceeds the limit of {ANNOTATIONS_LIMIT} (256 KiB)"
                    )
                )
            return problems
        case "finalizers":
            return [
                problem
                for i, item in enumerate(value)
                for problem in (
                    _qualified_name(item, [*path, i])
                    if isinstance(item, str)
                    else [_problem([*path, i], f"must be of type string (got {type(item).__name__})")]
                )
            ]
    return []


def _dns_name(
    value: str, path: list[str | int], shape: re.Pattern[str], limit: int, what: str
) -> list[Problem]:
    if len(value) > limit:
        return [_problem(path, f"must have at most {limit} characters (got {len(value)})")]
    if shape.fullmatch(value) is None:
        return [
            _problem(
                path,
                f"{shown(value)} is not {what}: lowercase letters, digits and '-'"
                + (", dot-separated," if "subdomain" in what else "")
                + " starting and ending with a letter or digit",
            )
        ]
    return []


def _string_map(value: dict[str, Any], path: list[str | int], check_value: Any) -> list[Problem]:
    problems: list[Problem] = []
    for key, item in value.items():
        problems += _qualified_name(key, path)
        if not isinstance(item, str):
            problems.append(
                _problem([*path, key], f"must be a string (got {type(item).__name__}): quote the value")
            )
        else:
            problems += check_value(item, [*path, key])
    return problems


def _qualified_name(key: str, path: list[str | int]) -> list[Problem]:
    """A label, annotation or finalizer name: `[prefix/]name`, the prefix a DNS subdomain."""
    prefix, slash, name = key.rpartition("/")
    reasons = []
    if slash and (not prefix or len(prefix) > 253 or _DNS_SUBDOMAIN.fullmatch(prefix) is None):
        reasons.append("its prefix must be a lowercase DNS subdomain of at most 253 characters")
    if "/" in prefix:
        reasons.append("it has more than one '/'")
    if len(name) > 63 or _QUALIFIED_NAME.fullmatch(name) is None:
        reasons.append(
            "its name must have at most 63 characters: letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if not reasons:
        return []
    return [_problem(path, f"key {shown(key)} is not a qualified name: {'; '.join(reasons)}")]


def _label_value(value: str, path: list[str | int]) -> list[Problem]:
    if value == "" or (len(value) <= 63 and _QUALIFIED_NAME.fullmatch(value) is not None):
        return []
    return [
        _problem(
            path,
            f"{shown(value)} is not a valid label value: at most 63 characters, letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit",
        )
    ]


def _problem(path: list[str | int], message: str) -> Problem:
    return Problem(join_path(path), message, "schema")
