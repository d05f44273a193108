"""Resource declarations for the emulator: builtins, Federator's CRDs (read from crds/) and Spark.

kmock only serves discovery, and kopf only watches, what is declared with its kind, verbs, scope and
subresources; an undeclared resource is advertised with no verbs and kopf silently ignores it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import kmock
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "crds"
VERBS = {"get", "list", "watch", "create", "patch", "update", "delete", "deletecollection"}

# The two Spark operators Federator can drive. Declared statically (their CRDs, vendored in
# tests/fixtures/spark-operator-crds for schema checks, are about 20,000 lines to parse).
SPARK = {
    "sparkoperator.k8s.io/v1beta2/sparkapplications": "SparkApplication",  # kubeflow spark-operator
    "spark.apache.org/v1/sparkapplications": "SparkApplication",  # apache spark-kubernetes-operator
}


def load_bundled(resources: kmock.ResourcesArray) -> None:
    """kmock's bundled builtin discovery; it uses importlib.resources.read_binary, deprecated in 3.11."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resources.load_bundled()


def crd_declarations(crd: dict[str, Any]) -> dict[str, kmock.ResourceInfo]:
    """``group/version/plural`` → ResourceInfo for every served version of one CRD manifest."""
    spec, names = crd["spec"], crd["spec"]["names"]
    return {
        f"{spec['group']}/{version['name']}/{names['plural']}": kmock.ResourceInfo(
            kind=names["kind"],
            singular=names.get("singular", names["kind"].lower()),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            verbs=VERBS,
            shortnames=set(names.get("shortNames", [])),
            categories=set(names.get("categories", [])),
            subresources=set(version.get("subresources", {})),
        )
        for version in spec["versions"]
        if version.get("served", True)
    }


def load_crds(paths: Iterable[Path]) -> dict[str, kmock.ResourceInfo]:
    found: dict[str, kmock.ResourceInfo] = {}
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                found.update(crd_declarations(doc))
    return found


def declare_all(resources: kmock.ResourcesArray, crd_dir: Path = CRD_DIR) -> None:
    """Builtins (kmock's bundled discovery, incl. CRDs themselves), Federator's kinds and Spark's."""
    load_bundled(resources)
    for key, info in load_crds(sorted(crd_dir.glob("*.yaml"))).items():
        resources[key] = info
    for key, kind in SPARK.items():
        resources[key] = kmock.ResourceInfo(
            kind=kind,
            singular=kind.lower(),
            namespaced=True,
            verbs=VERBS,
            shortnames={"sparkapp"},
            subresources={"status"},
        )
