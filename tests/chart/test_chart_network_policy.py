"""The optional NetworkPolicies (off by default). `networkPolicy.enabled` isolates the operator pods: they
may be reached on the metrics port only, and reach DNS, the API server, Azure and their tasks' Spark
drivers' status port only, each on its own ports, narrowed to the addresses the installer gives.
`networkPolicy.sparkPods` isolates the tasks' Spark pods in each Spark namespace: only each other, and
the operator and Prometheus on the drivers' metrics port, reach them."""

from __future__ import annotations

from typing import Any

import pytest
from chart_support import MATRIX, NAMESPACE, RELEASE, Manifest, Render, of_kind, one

WITH_POLICY = [name for name in MATRIX if MATRIX[name].get("networkPolicy", {}).get("enabled")]
OPERATOR_POLICY = f"{RELEASE}-federator"
Port = tuple[Any, str]  # (port number or name, protocol)


def _ports(rule: dict[str, Any]) -> set[Port]:
    return {(p["port"], p.get("protocol", "TCP")) for p in rule["ports"]}  # TCP: the API default


def _egress_to(policy: Manifest, ports: set[Port]) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [r for r in policy["spec"]["egress"] if _ports(r) == ports]
    assert len(rules) == 1, rules
    return rules[0]


def _policies(manifests: list[Manifest]) -> dict[tuple[str, str], Manifest]:
    """(namespace, name) → NetworkPolicy."""
    found = of_kind(manifests, "NetworkPolicy")
    return {(m["metadata"]["namespace"], m["metadata"]["name"]): m for m in found}


def _operator_policy(manifests: list[Manifest]) -> Manifest:
    return _policies(manifests)[(NAMESPACE, OPERATOR_POLICY)]


def _operator_pod_labels(manifests: list[Manifest]) -> dict[str, str]:
    labels: dict[str, str] = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


@pytest.mark.parametrize("name", [name for name in MATRIX if name not in WITH_POLICY])
def test_no_network_policy_unless_asked_for(render: Render, name: str) -> None:
    assert not of_kind(render(MATRIX[name]), "NetworkPolicy")


@pytest.mark.parametrize("name", WITH_POLICY)
def test_it_isolates_the_operator_pods_both_ways(render: Render, name: str) -> None:
    manifests = render(MATRIX[name])
    policy = _operator_policy(manifests)
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= _operator_pod_labels(manifests).items()
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    # Every rule names its ports: none opens a peer on all of them.
    assert all(rule.get("ports") for rule in policy["spec"]["ingress"] + policy["spec"]["egress"])


@pytest.mark.parametrize("name", WITH_POLICY)
def test_only_the_metrics_port_may_be_reached(render: Render, name: str) -> None:
    manifests = render(MATRIX[name])
    [rule] = _operator_policy(manifests)["spec"]["ingress"]
    assert _ports(rule) == {("metrics", "TCP")}
    [container] = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "metrics" in {p["name"] for p in container["ports"]}  # the named port exists on the pod
    assert rule.get("from", []) == MATRIX[name]["networkPolicy"].get("metricsFrom", [])


def test_egress_goes_to_dns_the_api_server_and_azure_on_their_ports_only(render: Render) -> None:
    values = MATRIX["network-policy-namespaced"]["networkPolicy"]
    policy = _operator_policy(render(MATRIX["network-policy-namespaced"]))
    assert _egress_to(policy, {(53, "UDP"), (53, "TCP")})["to"] == values["dnsTo"]
    api = _egress_to(policy, {(443, "TCP")})
    assert api["to"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}]
    azure = _egress_to(policy, {(443, "TCP"), (5671, "TCP")})
    assert azure["to"] == [{"ipBlock": {"cidr": "10.20.0.0/16"}}, {"ipBlock": {"cidr": "fd00:20::/64"}}]
    assert policy["spec"]["egress"][-1] == values["extraEgress"][0]
    assert len(policy["spec"]["egress"]) == 5  # DNS, API server, Azure, the drivers, the extra rule


def test_by_default_egress_reaches_any_address_but_only_on_the_listed_ports(render: Render) -> None:
    policy = _operator_policy(render(MATRIX["network-policy-all-namespaces"]))
    ports = set().union(*(_ports(r) for r in policy["spec"]["egress"]))
    assert ports == {(53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP"), (5671, "TCP"), (9464, "TCP")}
    assert "from" not in policy["spec"]["ingress"][0]


@pytest.mark.parametrize(("name", "namespace_selector"), [
    ("network-policy-namespaced", {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}]}),
    ("network-policy-all-namespaces", {}),
])
def test_the_drivers_status_port_is_reached_in_the_watched_namespaces_only(
    render: Render, name: str, namespace_selector: dict[str, Any]
) -> None:
    manifests = render({**MATRIX[name], "metrics": {"podMonitor": {"enabled": True}}})
    [peer] = _egress_to(_operator_policy(manifests), {(9464, "TCP")})["to"]
    assert peer["namespaceSelector"] == namespace_selector
    # The same pods Prometheus scrapes: the Spark drivers of Federator's tasks.
    assert peer["podSelector"] == one(manifests, "PodMonitor")["spec"]["selector"]


@pytest.mark.parametrize(("name", "namespaces"), [
    ("network-policy-namespaced", ["team-a", "team-b"]),
    ("network-policy-all-namespaces", ["federator-system"]),  # spark.namespaces, default the release's
])
def test_spark_pods_are_reached_by_each_other_and_on_the_metrics_port_only(
    render: Render, name: str, namespaces: list[str]
) -> None:
    manifests = render({**MATRIX[name], "metrics": {"podMonitor": {"enabled": True}}})
    spark = {ns: p for (ns, n), p in _policies(manifests).items() if n == "federator-spark"}
    assert sorted(spark) == namespaces
    task_pods = {"app.kubernetes.io/managed-by": "federator"}
    # The PodMonitor's drivers are among the pods it selects.
    assert one(manifests, "PodMonitor")["spec"]["selector"]["matchLabels"].items() >= task_pods.items()
    for policy in spark.values():
        assert policy["spec"]["podSelector"] == {"matchLabels": task_pods}
        assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress: Azure and the API, as the task says
        peers, metrics = policy["spec"]["ingress"]
        assert peers == {"from": [{"podSelector": {"matchLabels": task_pods}}]}  # no namespaceSelector: own
        assert _ports(metrics) == {(9464, "TCP")}


def test_the_drivers_metrics_port_is_for_the_operator_and_prometheus_when_these_are_named(
    render: Render,
) -> None:
    manifests = render(MATRIX["network-policy-namespaced"])
    metrics = _policies(manifests)[("team-a", "federator-spark")]["spec"]["ingress"][1]
    operator, *prometheus = metrics["from"]
    assert operator["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}
    assert operator["podSelector"]["matchLabels"].items() <= _operator_pod_labels(manifests).items()
    assert prometheus == MATRIX["network-policy-namespaced"]["networkPolicy"]["metricsFrom"]
    anywhere = _policies(render(MATRIX["network-policy-all-namespaces"]))[(NAMESPACE, "federator-spark")]
    assert "from" not in anywhere["spec"]["ingress"][1]


def test_the_spark_pods_policy_stands_alone(render: Render) -> None:
    manifests = render({"networkPolicy": {"sparkPods": True}})
    assert list(_policies(manifests)) == [(NAMESPACE, "federator-spark")]
