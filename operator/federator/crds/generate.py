"""CRD manifests generated from the API models.

pydantic emits JSON Schema; Kubernetes wants a *structural* OpenAPI v3 schema: every node typed, no
`$ref`, no `anyOf` for optional fields, no `additionalProperties` beside `properties`, no titles.
"""

from __future__ import annotations

from typing import Any

from federator import plainyaml
from federator_contract.api.base import GROUP, VERSION, FedModel
from federator_contract.api.kinds import KINDS, Kind

_DROPPED_KEYS = {"title", "additionalProperties", "$defs"}


def structural_schema(model: type[FedModel], *, keep_defaults: bool = True) -> dict[str, Any]:
    """The model's JSON Schema rewritten as a Kubernetes structural schema."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    return _convert(raw, defs, keep_defaults)


def _convert(node: dict[str, Any], defs: dict[str, Any], keep_defaults: bool) -> dict[str, Any]:
    node = _resolve(node, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS or key == "default":
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out["properties"] = {name: _convert(sub, defs, keep_defaults) for name, sub in value.items()}
        elif key == "items":
            out["items"] = _convert(value, defs, keep_defaults)
        elif key == "description":
            # Docstrings wrap at the source's line length; kubectl explain wraps on its own.
            out["description"] = " ".join(value.split())
        else:
            out[key] = value
    if node.get("type") == "object" and "properties" not in node:
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            out["additionalProperties"] = _convert(extra, defs, keep_defaults)
        elif extra is not False:
            # A free-form JSON document (e.g. an inline JSON Schema): kept as written.
            out["x-kubernetes-preserve-unknown-fields"] = True
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    if keep_defaults and "default" in node and node["default"] is not None:
        out["default"] = _structural_default(node["default"])
    if "required" in out:
        out["required"] = sorted(out["required"])
    return out


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline `$ref` and collapse `anyOf: [X, null]` (an optional field) into X, keeping the outer
    keys (field description, default, CEL rules) over those of the referenced definition."""
    outer = dict(node)
    if "anyOf" in outer:
        branches = [b for b in outer.pop("anyOf") if b.get("type") != "null"]
        if len(branches) != 1:
            raise ValueError(f"unions are not structural: {branches}")
        outer = {**_resolve(branches[0], defs), **outer}
    if "$ref" in outer:
        target = defs[outer.pop("$ref").rsplit("/", 1)[-1]]
        outer = {**_resolve(target, defs), **outer}
    if "allOf" in outer and len(outer["allOf"]) == 1:
        outer = {**_resolve(outer.pop("allOf")[0], defs), **outer}
    return outer


def _structural_default(value: Any) -> Any:
    # Object defaults become `{}`: the API server then applies each nested field's own default, which
    # keeps one source of truth per field.
    if isinstance(value, dict):
        return {}
    return value


def crd(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    spec_schema = structural_schema(kind.spec)
    status_schema = structural_schema(kind.status, keep_defaults=False)
    root: dict[str, Any] = {
        "type": "object",
        "description": kind.description,
        "required": ["spec"],
        "properties": {
            "apiVersion": {
                "type": "string",
                "description": "APIVersion of this object: federator.io/v1alpha1.",
            },
            "kind": {"type": "string", "description": f"Kind of this object: {kind.kind}."},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": status_schema,
        },
        **kind.root_rules,
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{kind.plural}.{GROUP}",
            "labels": {"app.kubernetes.io/name": "federator", "app.kubernetes.io/part-of": "federator"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": ["federator"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": list(kind.printer_columns),
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def crd_file_name(kind: Kind) -> str:
    return f"{GROUP}_{kind.plural}.yaml"


def render_crd(kind: Kind) -> str:
    """One CRD as YAML text, stable byte for byte across runs."""
    header = (
        "# Generated by `federator crds` from the models in contract/federator_contract/api. Do not edit.\n"
    )
    return header + plainyaml.dump(crd(kind), width=100)


def render_all() -> dict[str, str]:
    """File name → YAML text for every kind."""
    return {crd_file_name(k): render_crd(k) for k in KINDS}
