"""`helm lint --strict` and `helm template` pass, and every rendered object is valid for the claimed
Kubernetes versions; the Deployment honours the operator's contract (env, ports, probes, security)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from chart_support import (
    CHART,
    KUBE_VERSIONS,
    MATRIX,
    NAMESPACE,
    RELEASE,
    Helm,
    Manifest,
    Render,
    of_kind,
    one,
)

# Custom kinds the chart may render, and where their schema comes from.
PEERING_KINDS = {"KopfPeering", "ClusterKopfPeering"}
MONITORING_KINDS = {"ServiceMonitor", "PodMonitor"}


def env_of(deployment: Manifest) -> dict[str, Any]:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_chart_claims_kubernetes_versions_with_ga_cel() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["apiVersion"] == "v2"
    assert chart["kubeVersion"] == ">=1.29.0-0"


@pytest.mark.parametrize("name", MATRIX)
def test_helm_lint_strict_passes(chart_helm: Helm, values_file: Any, name: str) -> None:
    args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
    if MATRIX[name]:
        args += ["--values", str(values_file(MATRIX[name]))]
    out = chart_helm(*args).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out


def test_template_refuses_kubernetes_older_than_claimed(chart_helm: Helm) -> None:
    done = chart_helm("template", RELEASE, str(CHART), "--kube-version", "1.28.9", check=False)
    assert done.returncode != 0
    assert "kubeVersion" in done.stderr or "incompatible" in done.stderr


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("name", MATRIX)
def test_every_rendered_object_validates_strictly(render: Render, name: str, kube_version: str) -> None:
    manifests = render(MATRIX[name], kube_version=kube_version)
    assert manifests, "nothing rendered"
    peering_crds = {d["spec"]["names"]["kind"]: d for d in yaml.safe_load_all(
        (CHART / "crds" / "kopf.dev_peerings.yaml").read_text(encoding="utf-8"))}
    for m in manifests:
        what = f"{m['kind']} {m['metadata'].get('namespace', '')}/{m['metadata']['name']}"
        if m["kind"] in PEERING_KINDS:
            schema = peering_crds[m["kind"]]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            jsonschema.validate(m, schema)
            assert m["apiVersion"] == "kopf.dev/v1", what
        elif m["kind"] in MONITORING_KINDS:
            assert m["apiVersion"] == "monitoring.coreos.com/v1", what  # no offline schema for these
        else:
            try:
                kubernetes_validate.validate(m, kube_version, strict=True)
            except kubernetes_validate.ValidationError as e:
                raise AssertionError(f"{what} is invalid for Kubernetes {kube_version}: {e}") from e


@pytest.mark.parametrize("name", MATRIX)
def test_objects_are_labelled_and_namespaced(render: Render, name: str) -> None:
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "ClusterKopfPeering"}
    for m in render(MATRIX[name]):
        labels = m["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/part-of"] == "federator"
        assert ("namespace" in m["metadata"]) == (m["kind"] not in cluster_scoped), m["metadata"]["name"]


def test_deployment_runs_the_operator_with_its_health_and_metrics_ports(render: Render) -> None:
    deployment = one(render(), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "ghcr.io/federator/federator-operator:0.1.0"
    assert container["args"] == ["operator", "--liveness=http://0.0.0.0:8080/healthz"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8080, "metrics": 9090}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert pod["serviceAccountName"] == f"{RELEASE}-federator"


def test_deployment_is_non_root_with_a_read_only_root_filesystem(render: Render) -> None:
    pod = one(render(), "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    # The only writable path is a size-limited scratch volume.
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/tmp"]
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]


def test_operator_settings_reach_the_operator_as_env(render: Render) -> None:
    env = env_of(one(render(MATRIX["apache-launcher-pinned-images"]), "Deployment"))
    assert env["FEDERATOR_LAUNCHER"] == "apache"
    assert env["FEDERATOR_SPARK_IMAGE"] == "registry.example:5000/federator-spark:0.1.0-rc1"
    assert env["FEDERATOR_SPARK_VERSION"] == "4.3.0"
    assert env["FEDERATOR_SPARK_SERVICE_ACCOUNT"] == "federator-spark"
    assert env["FEDERATOR_CHECKPOINT_CLAIM"] == "federator-checkpoints"
    assert env["FEDERATOR_APP_METRICS_PORT"] == "9464"
    assert env["FEDERATOR_ARM_ENDPOINT"] == "https://management.chinacloudapi.cn"
    assert env["FEDERATOR_DRIFT_INTERVAL_SECONDS"] == "60"
    assert env["POD_ID"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    [container] = one(render(MATRIX["apache-launcher-pinned-images"]), "Deployment")["spec"]["template"][
        "spec"]["containers"]
    assert container["image"] == "ghcr.io/federator/federator-operator@sha256:" + "a" * 64


@pytest.mark.parametrize(("name", "expected"), [
    ("defaults", {"FEDERATOR_NAMESPACES": NAMESPACE}),
    ("several-namespaces", {"FEDERATOR_NAMESPACES": "team-a,team-b,team-c"}),
    ("all-namespaces", {"FEDERATOR_ALL_NAMESPACES": "true"}),
])
def test_watched_namespaces_reach_the_operator(render: Render, name: str, expected: dict[str, str]) -> None:
    env = env_of(one(render(MATRIX[name]), "Deployment"))
    scope = {k: v for k, v in env.items() if k in {"FEDERATOR_NAMESPACES", "FEDERATOR_ALL_NAMESPACES"}}
    assert scope == expected


def test_single_replica_runs_unpeered_and_is_replaced_not_rolled(render: Render) -> None:
    manifests = render()
    deployment = one(manifests, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert "FEDERATOR_PEERING" not in env_of(deployment)
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert not [m for m in manifests if m["kind"] in PEERING_KINDS]


@pytest.mark.parametrize(("name", "kind", "namespaces"), [
    ("ha-peering-namespaced", "KopfPeering", ["team-a", "team-b"]),
    ("ha-peering-cluster", "ClusterKopfPeering", [None]),
])
def test_several_replicas_elect_a_leader_through_kopf_peering(render: Render, name: str, kind: str,
                                                              namespaces: list[str | None]) -> None:
    manifests = render(MATRIX[name])
    deployment = one(manifests, "Deployment")
    assert deployment["spec"]["replicas"] == MATRIX[name]["replicas"]
    assert "strategy" not in deployment["spec"]  # rolling update: the peers hand over
    peering = env_of(deployment)["FEDERATOR_PEERING"]
    peerings = [m for m in manifests if m["kind"] in PEERING_KINDS]
    assert {m["kind"] for m in peerings} == {kind}
    found = sorted(((m["metadata"].get("namespace"), m["metadata"]["name"]) for m in peerings), key=str)
    assert found == [(ns, peering) for ns in namespaces]


def test_metrics_service_targets_the_operator_metrics_port(render: Render) -> None:
    manifests = render()
    service = one(manifests, "Service")
    pod_labels = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9090, "targetPort": "metrics",
                                         "protocol": "TCP"}]


def test_service_monitor_is_optional_and_scrapes_the_metrics_service(render: Render) -> None:
    assert not of_kind(render(), "ServiceMonitor")
    manifests = render(MATRIX["monitoring"])
    monitor = one(manifests, "ServiceMonitor")
    service = one(manifests, "Service")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    endpoint = monitor["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["path"], endpoint["honorLabels"]) == ("metrics", "/metrics", True)


def test_pod_monitor_scrapes_spark_drivers_in_the_watched_namespaces(render: Render) -> None:
    monitor = one(render(MATRIX["monitoring"]), "PodMonitor")
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["honorLabels"] is True  # the app's own namespace/task labels win
    address = [r for r in endpoint["relabelings"] if r.get("targetLabel") == "__address__"]
    assert address == [{"sourceLabels": ["__meta_kubernetes_pod_ip"], "targetLabel": "__address__",
                        "replacement": "$1:9464"}]
    assert monitor["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/managed-by": "federator",
                                                          "spark-role": "driver"}
    assert one(render(MATRIX["monitoring-all-namespaces"]), "PodMonitor")["spec"]["namespaceSelector"] == {
        "any": True}


def test_service_monitor_without_the_service_is_refused(chart_helm: Helm, values_file: Any) -> None:
    values = {"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}}
    done = chart_helm("template", RELEASE, str(CHART), "--values", str(values_file(values)), check=False)
    assert done.returncode != 0
    assert "requires metrics.service.enabled" in done.stderr


def test_pod_disruption_budget_covers_the_operator_pods(render: Render) -> None:
    manifests = render()
    pdb = one(manifests, "PodDisruptionBudget")
    pod_labels = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1  # a single replica must not block node drains
    assert not of_kind(render(MATRIX["everything-off"]), "PodDisruptionBudget")


def test_grafana_dashboard_config_map_carries_the_chart_dashboard(render: Render) -> None:
    assert not [m for m in render() if m["kind"] == "ConfigMap"]
    cm = one(render(MATRIX["monitoring"]), "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads((CHART / "dashboards" / "federator.json").read_text(encoding="utf-8"))
    assert json.loads(cm["data"]["federator.json"]) == shipped


@pytest.mark.parametrize(("name", "namespaces"), [
    ("defaults", [NAMESPACE]),
    ("several-namespaces", ["team-a", "team-b", "team-c"]),
    ("all-namespaces", ["spark-jobs", "team-a"]),
])
def test_spark_driver_service_account_exists_where_tasks_run(render: Render, name: str,
                                                             namespaces: list[str]) -> None:
    accounts = [m for m in of_kind(render(MATRIX[name]), "ServiceAccount")
                if m["metadata"]["name"] == "federator-spark"]
    assert sorted(a["metadata"]["namespace"] for a in accounts) == namespaces
    assert not [m for m in of_kind(render(MATRIX["everything-off"]), "ServiceAccount")]


def test_chart_defaults_agree_with_the_operators_own_defaults(render: Render) -> None:
    from federator.settings import OperatorSettings

    env = env_of(one(render(), "Deployment"))
    defaults = OperatorSettings()
    assert OperatorSettings.from_env(env) == defaults  # every value the chart sets parses, and is the default
    assert env["FEDERATOR_SPARK_IMAGE"] == defaults.spark_image
