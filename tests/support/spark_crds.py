"""The Spark operators' real CRDs (vendored in tests/fixtures/spark-operator-crds, sources in its README):
what a cluster with either operator installed would check a rendered SparkApplication against."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from federator.validation.schema import crd_root_json_schema, openapi_to_json_schema

DIRECTORY = Path(__file__).resolve().parents[1] / "fixtures" / "spark-operator-crds"
FILES = {
    "kubeflow": ("kubeflow-sparkoperator.k8s.io_sparkapplications.yaml", "v1beta2"),
    "apache": ("apache-sparkapplications.spark.apache.org-v1.yaml", "v1"),
}


@cache
def served_schema(launcher: str) -> dict[str, Any]:
    """The `openAPIV3Schema` of the version Federator renders for ``launcher``."""
    file, version = FILES[launcher]
    crd = yaml.safe_load((DIRECTORY / file).read_text(encoding="utf-8"))
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    return schema


@cache
def validator(launcher: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(crd_root_json_schema(served_schema(launcher)))


def crd_errors(launcher: str, app: dict[str, Any]) -> list[str]:
    """Every schema violation of ``app``, each as `path: message`."""
    errors = validator(launcher).iter_errors(app)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


@cache
def _pod_template_validator() -> jsonschema.Draft202012Validator:
    # The apache CRD spells out the core PodTemplateSpec; kubeflow's `template` field preserves unknown
    # fields and checks nothing, so its templates are checked against the same core schema.
    spec = served_schema("apache")["properties"]["spec"]["properties"]["driverSpec"]
    return jsonschema.Draft202012Validator(openapi_to_json_schema(spec["properties"]["podTemplateSpec"]))


def pod_template_errors(template: dict[str, Any]) -> list[str]:
    """Every violation of the core Kubernetes PodTemplateSpec schema, each as `path: message`."""
    errors = _pod_template_validator().iter_errors(template)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]
