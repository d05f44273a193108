"""Shared constants and helpers of the chart tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

from support.resources import ROOT

CHART = ROOT / "charts" / "federator"
RELEASE, NAMESPACE = "fed", "federator-system"
# The ends of the range Chart.yaml claims (kubeVersion ">=1.29.0-0"), and the newest schemas available.
KUBE_VERSIONS = ("1.29.0", "1.37.0")

# Values that change which objects the chart renders. Every test below holds for all of them.
MATRIX: dict[str, dict[str, Any]] = {
    "defaults": {},
    "several-namespaces": {"watchNamespaces": ["team-a", "team-b", "team-c"]},
    "all-namespaces": {"watchAllNamespaces": True, "spark": {"namespaces": ["spark-jobs", "team-a"]}},
    "ha-peering-namespaced": {"replicas": 2, "watchNamespaces": ["team-a", "team-b"]},
    "ha-peering-cluster": {"replicas": 3, "watchAllNamespaces": True},
    "monitoring": {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                               "podMonitor": {"enabled": True}},
                   "grafanaDashboard": {"enabled": True}},
    "monitoring-all-namespaces": {"watchAllNamespaces": True, "metrics": {"podMonitor": {"enabled": True}}},
    "everything-off": {"podDisruptionBudget": {"enabled": False},
                       "metrics": {"service": {"enabled": False}},
                       "spark": {"serviceAccount": {"create": False}},
                       "serviceAccount": {"create": False, "name": "existing"}},
    "network-policy-namespaced": {
        "watchNamespaces": ["team-a", "team-b"],
        "networkPolicy": {
            "enabled": True,
            "sparkPods": True,
            "metricsFrom": [
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "dnsTo": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                       "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "apiServer": {"cidrs": ["10.0.0.1/32"], "ports": [443]},
            "azure": {"cidrs": ["10.20.0.0/16", "fd00:20::/64"], "ports": [443, 5671]},
            "extraEgress": [{"to": [{"ipBlock": {"cidr": "10.30.0.5/32"}}], "ports": [{"port": 3128}]}]}},
    "network-policy-all-namespaces": {"watchAllNamespaces": True,
                                      "networkPolicy": {"enabled": True, "sparkPods": True},
                                      "spark": {"rpcSecret": {"create": False}}},
    "apache-launcher-pinned-images": {
        "launcher": {"default": "apache"},
        "azure": {"armEndpoint": "https://management.chinacloudapi.cn", "driftIntervalSeconds": 60},
        "image": {"digest": "sha256:" + "a" * 64},
        "spark": {"image": {"repository": "registry.example:5000/federator-spark", "tag": "0.1.0-rc1"}}},
}

Manifest = dict[str, Any]
Render = Callable[..., list[Manifest]]
Helm = Callable[..., subprocess.CompletedProcess[str]]


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def one(manifests: list[Manifest], kind: str) -> Manifest:
    found = of_kind(manifests, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]
