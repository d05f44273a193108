"""values.schema.json rejects bad values before anything renders: helm lint and helm template fail."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from chart_support import CHART, RELEASE, Helm

SCHEMA = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))

BAD: dict[str, dict[str, Any]] = {
    "negative replicas": {"replicas": -1},
    "replicas as a string": {"replicas": "two"},
    "fractional replicas": {"replicas": 1.5},
    "unknown launcher": {"launcher": {"default": "yarn"}},
    "watchAllNamespaces not a boolean": {"watchAllNamespaces": "yes"},
    "watchNamespaces not a list": {"watchNamespaces": "team-a,team-b"},
    "invalid namespace name": {"watchNamespaces": ["Team_A"]},
    "unknown top-level key (typo)": {"replica": 2},
    "unknown nested key (typo)": {"metrics": {"serviceMonitor": {"enable": True}}},
    "writable root filesystem": {"securityContext": {"readOnlyRootFilesystem": False,
                                                     "allowPrivilegeEscalation": False}},
    "root allowed": {"podSecurityContext": {"runAsNonRoot": False}},
    "metrics port out of range": {"metrics": {"port": 70000}},
    "malformed image digest": {"image": {"repository": "ghcr.io/federator/federator-operator",
                                         "digest": "sha256:abc"}},
    "unknown pull policy": {"image": {"repository": "x", "pullPolicy": "Sometimes"}},
    "malformed scrape interval": {"metrics": {"serviceMonitor": {"interval": "thirty seconds"}}},
    "spark version not x.y.z": {"spark": {"version": "4.3"}},
    "network policy not a switch": {"networkPolicy": {"enabled": "yes"}},
    "network policy port out of range": {"networkPolicy": {"enabled": True, "azure": {"ports": [70000]}}},
    "network policy address not a CIDR": {"networkPolicy": {"apiServer": {"cidrs": ["kubernetes.default"]}}},
    "unknown network policy key (typo)": {"networkPolicy": {"metricFrom": []}},
    "spark RPC secret switch not a boolean": {"spark": {"rpcSecret": {"create": "no"}}},
}
GOOD: dict[str, dict[str, Any]] = {
    "ha in two namespaces": {"replicas": 2, "watchNamespaces": ["team-a", "team-b"]},
    "apache launcher": {"launcher": {"default": "apache"}},
    "percentage disruption budget": {"podDisruptionBudget": {"maxUnavailable": "50%"}},
    "workload identity": {"serviceAccount": {"annotations": {"azure.workload.identity/client-id": "0000"}},
                          "podLabels": {"azure.workload.identity/use": "true"}},
    "zero replicas (paused)": {"replicas": 0},
}


def test_default_values_satisfy_the_schema() -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    jsonschema.validate(defaults, SCHEMA)


@pytest.mark.parametrize("case", BAD)
def test_helm_template_and_lint_reject_bad_values(chart_helm: Helm, values_file: Any, case: str) -> None:
    path = str(values_file(BAD[case]))
    template = chart_helm("template", RELEASE, str(CHART), "--values", path, check=False)
    assert template.returncode != 0, f"{case}: helm template accepted it"
    assert "values don't meet the specifications of the schema" in template.stderr, template.stderr
    lint = chart_helm("lint", "--strict", str(CHART), "--values", path, check=False)
    assert lint.returncode != 0, f"{case}: helm lint accepted it"


@pytest.mark.parametrize("case", GOOD)
def test_helm_template_accepts_good_overrides(chart_helm: Helm, values_file: Any, case: str) -> None:
    chart_helm("template", RELEASE, str(CHART), "--values", str(values_file(GOOD[case])))
