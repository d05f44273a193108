"""The chart ships exactly the project's CRDs (Helm installs crds/ first), plus kopf's peering CRDs."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml
from chart_support import CHART, KUBE_VERSIONS, Render, of_kind

from support.resources import ROOT

PROJECT_CRDS = sorted(p.name for p in (ROOT / "crds").glob("*.yaml"))
PEERING_FILE = "kopf.dev_peerings.yaml"


def test_the_project_has_the_four_federator_crds() -> None:
    assert PROJECT_CRDS == ["federator.io_failovergroups.yaml", "federator.io_replicationapplications.yaml",
                            "federator.io_replicationtasks.yaml", "federator.io_servicebusmirrors.yaml"]


@pytest.mark.parametrize("name", PROJECT_CRDS)
def test_chart_crd_is_byte_identical_to_the_generated_one(name: str) -> None:
    chart_copy = CHART / "crds" / name
    assert chart_copy.is_file(), (
        f"charts/federator/crds/{name} is missing: cp crds/*.yaml charts/federator/crds/")
    assert chart_copy.read_bytes() == (ROOT / "crds" / name).read_bytes(), (
        f"charts/federator/crds/{name} differs from crds/{name}: after `./dev crds`, "
        "run `cp crds/*.yaml charts/federator/crds/`")


def test_chart_crds_are_the_generated_ones_and_kopfs_peering_only() -> None:
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted([*PROJECT_CRDS, PEERING_FILE])


def test_kopf_peering_crds_match_what_kopf_looks_up() -> None:
    docs = list(yaml.safe_load_all((CHART / "crds" / PEERING_FILE).read_text(encoding="utf-8")))
    by_name = {d["metadata"]["name"]: d["spec"] for d in docs}
    assert set(by_name) == {"kopfpeerings.kopf.dev", "clusterkopfpeerings.kopf.dev"}
    expected = {"kopfpeerings.kopf.dev": ("Namespaced", "KopfPeering"),
                "clusterkopfpeerings.kopf.dev": ("Cluster", "ClusterKopfPeering")}
    for name, (scope, kind) in expected.items():
        spec = by_name[name]
        assert (spec["group"], spec["scope"], spec["names"]["kind"]) == ("kopf.dev", scope, kind)
        [version] = spec["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
        # kopf writes each peer's heartbeat under status.<identity>: status must keep unknown fields.
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert status["x-kubernetes-preserve-unknown-fields"] is True


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_rendered_crds_validate_strictly(render: Render, kube_version: str) -> None:
    crds = of_kind(render(kube_version=kube_version, include_crds=True), "CustomResourceDefinition")
    assert sorted(c["metadata"]["name"] for c in crds) == sorted([
        "replicationtasks.federator.io", "servicebusmirrors.federator.io", "failovergroups.federator.io",
        "replicationapplications.federator.io",
        "kopfpeerings.kopf.dev", "clusterkopfpeerings.kopf.dev"])
    for crd in crds:
        kubernetes_validate.validate(crd, kube_version, strict=True)
