"""The CRDs in crds/ are generated from the models, structural, and complete enough for kubectl explain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from federator.crds.generate import crd, render_all
from federator.crds.reference import render_reference
from federator_contract.api.kinds import KINDS, Kind

ROOT = Path(__file__).resolve().parents[2]


def test_crds_directory_matches_the_models() -> None:
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "crds").glob("*.yaml")}
    assert on_disk == render_all(), (
        "crds/ is stale: run `federator crds -o crds --reference docs/api-reference.md`"
    )


def test_api_reference_matches_the_models() -> None:
    on_disk = (ROOT / "docs" / "api-reference.md").read_text(encoding="utf-8")
    assert on_disk == render_reference(), (
        "docs/api-reference.md is stale: run `federator crds --reference ...`"
    )


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_crd_is_a_valid_kubernetes_object(kind: Kind) -> None:
    kubernetes_validate.validate(crd(kind), "1.30.0", strict=True)


def _walk(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    found = [(path, node)]
    for name, sub in node.get("properties", {}).items():
        found += _walk(sub, f"{path}.{name}")
    if "items" in node:
        found += _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += _walk(node["additionalProperties"], f"{path}{{}}")
    return found


def _schema(kind: Kind) -> dict[str, Any]:
    schema: dict[str, Any] = crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_schema_is_structural(kind: Kind) -> None:
    for path, node in _walk(_schema(kind), kind.kind):
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"{path} has no type"
        assert not ({"$ref", "anyOf", "oneOf", "allOf", "title"} & node.keys()), f"{path} is not structural"
        assert not ("properties" in node and "additionalProperties" in node), f"{path} mixes properties kinds"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_every_field_is_documented(kind: Kind) -> None:
    for section in ("spec", "status"):
        for path, node in _walk(_schema(kind)["properties"][section], section):
            if not path.endswith(("[]", "{}")):
                assert node.get("description"), f"{kind.kind} {path} has no description for kubectl explain"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_crd_names_status_and_columns(kind: Kind) -> None:
    spec = crd(kind)["spec"]
    version = spec["versions"][0]
    assert spec["group"] == "federator.io" and spec["scope"] == "Namespaced"
    assert spec["names"]["categories"] == ["federator"]
    assert spec["names"]["shortNames"] == list(kind.short_names)
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Ready"] == '.status.conditions[?(@.type=="Ready")].status'
    assert columns["Age"] == ".metadata.creationTimestamp"


def test_short_names_are_the_documented_ones() -> None:
    assert {k.kind: k.short_names for k in KINDS} == {
        "ReplicationTask": ("rt",),
        "ServiceBusMirror": ("sbm",),
        "FailoverGroup": ("fg",),
        "ReplicationApplication": ("rapp",),
    }


def test_lag_and_active_member_are_printer_columns() -> None:
    by_kind = {
        k.kind: {c["name"]: c for c in crd(k)["spec"]["versions"][0]["additionalPrinterColumns"]}
        for k in KINDS
    }
    # The worst source partition: `kubectl get rt` shows how far behind, -o wide which partition and the RPO.
    assert by_kind["ReplicationTask"]["Lag"]["jsonPath"] == ".status.lag.secondsBehind"
    assert by_kind["ReplicationTask"]["Behind"]["jsonPath"] == ".status.lag.eventsBehind"
    assert by_kind["ReplicationTask"]["Worst"]["jsonPath"] == ".status.lag.worstPartition"
    assert by_kind["ReplicationTask"]["RPO"]["jsonPath"] == ".status.lag.rpoSeconds"
    assert by_kind["FailoverGroup"]["Producers"]["jsonPath"] == ".status.producerMember"
    assert by_kind["FailoverGroup"]["Consumers"]["jsonPath"] == ".status.consumerMember"
    assert by_kind["ServiceBusMirror"]["Pattern"]["jsonPath"] == ".spec.pattern"


def test_crd_files_parse_as_single_yaml_documents() -> None:
    for path in (ROOT / "crds").glob("*.yaml"):
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        assert len(docs) == 1 and docs[0]["kind"] == "CustomResourceDefinition", path.name
