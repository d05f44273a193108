"""Least privilege: the operator gets exactly the verbs its handlers use, namespaced unless it watches
all namespaces, and Secrets only by name; the Spark driver only what it needs to run executors."""

from __future__ import annotations

from typing import Any

import pytest
from chart_support import MATRIX, NAMESPACE, RELEASE, Manifest, Render, of_kind

Triple = tuple[str, str, str]  # (apiGroup, resource, verb)
KINDS = ("replicationtasks", "servicebusmirrors", "failovergroups", "replicationapplications")


def triples(*groups: str, resources: tuple[str, ...], verbs: tuple[str, ...]) -> set[Triple]:
    return {(g, r, v) for g in groups for r in resources for v in verbs}


# What the operator does in a watched namespace (the contract with the handlers), and nothing more.
OPERATOR_NAMESPACED: set[Triple] = (
    triples("federator.io", resources=KINDS, verbs=("get", "list", "watch", "patch"))
    # A mirror's generated tasks, and the application they share unless its task template names one.
    | triples("federator.io", resources=("replicationtasks", "replicationapplications"),
              verbs=("create", "delete"))
    | triples("federator.io", resources=tuple(f"{k}/status" for k in KINDS), verbs=("get", "patch"))
    | triples("", resources=("configmaps",), verbs=("get", "list", "watch", "create", "patch", "delete"))
    | triples("sparkoperator.k8s.io", "spark.apache.org", resources=("sparkapplications",),
              verbs=("get", "list", "watch", "create", "patch", "delete"))
    | triples("", "events.k8s.io", resources=("events",), verbs=("create", "patch"))
    | triples("", resources=("secrets",), verbs=("get",))
    | triples("", resources=("serviceaccounts", "persistentvolumeclaims"), verbs=("get",))
    # An ARM credential's ServiceAccount: its federated token (TokenRequest), nothing else of it.
    | triples("", resources=("serviceaccounts/token",), verbs=("create",))
    | triples("", resources=("pods",), verbs=("list",))  # the driver pod, by label (observe/driver.py)
)
OPERATOR_CLUSTER_ONLY: set[Triple] = (
    triples("apiextensions.k8s.io", resources=("customresourcedefinitions",), verbs=("get", "list", "watch"))
    | triples("", resources=("namespaces",), verbs=("list", "watch"))
)
PEERING = ("get", "list", "watch", "patch")
SPARK_DRIVER: set[Triple] = triples(
    "", resources=("pods", "services", "configmaps", "persistentvolumeclaims"),
    verbs=("create", "get", "list", "watch", "delete", "patch"))


def granted(role: Manifest) -> set[Triple]:
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def roles(manifests: list[Manifest], name: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] in {"Role", "ClusterRole"} and m["metadata"]["name"] == name]


OPERATOR = f"{RELEASE}-federator"


@pytest.mark.parametrize("name", MATRIX)
def test_no_wildcards_anywhere(render: Render, name: str) -> None:
    for role in [m for m in render(MATRIX[name]) if m["kind"] in {"Role", "ClusterRole"}]:
        for rule in role["rules"]:
            assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames/nonResourceURLs
            for field in ("apiGroups", "resources", "verbs"):
                assert not [x for x in rule[field] if "*" in x], f"{role['metadata']['name']}: {rule}"


@pytest.mark.parametrize("name", MATRIX)
def test_secrets_can_only_be_read_by_name(render: Render, name: str) -> None:
    for role in [m for m in render(MATRIX[name]) if m["kind"] in {"Role", "ClusterRole"}]:
        secret_verbs = {v for g, r, v in granted(role) if g == "" and r == "secrets"}
        assert secret_verbs <= {"get"}, role["metadata"]["name"]


@pytest.mark.parametrize("name", MATRIX)
def test_service_accounts_give_the_operator_tokens_and_nothing_else(render: Render, name: str) -> None:
    """A serviceAccount ARM credential needs the account's token (TokenRequest): `create` on that
    subresource for the operator, no other verb on it and no write to the accounts themselves for anyone."""
    for role in [m for m in render(MATRIX[name]) if m["kind"] in {"Role", "ClusterRole"}]:
        verbs = {r: {v for g, res, v in granted(role) if g == "" and res == r}
                 for r in ("serviceaccounts", "serviceaccounts/token")}
        operator = role["metadata"]["name"] == OPERATOR
        assert verbs == {"serviceaccounts": {"get"} if operator else set(),
                         "serviceaccounts/token": {"create"} if operator else set()}, role["metadata"]


@pytest.mark.parametrize("name", ["defaults", "several-namespaces", "ha-peering-namespaced", "monitoring"])
def test_namespaced_operator_gets_one_role_per_watched_namespace_and_no_cluster_role(render: Render,
                                                                                    name: str) -> None:
    manifests = render(MATRIX[name])
    assert not of_kind(manifests, "ClusterRole") and not of_kind(manifests, "ClusterRoleBinding")
    watched = MATRIX[name].get("watchNamespaces", [NAMESPACE])
    operator_roles = roles(manifests, OPERATOR)
    assert sorted(r["metadata"]["namespace"] for r in operator_roles) == sorted(watched)
    peering = triples("kopf.dev", resources=("kopfpeerings",), verbs=PEERING) if MATRIX[name].get(
        "replicas", 1) > 1 else set()
    for role in operator_roles:
        assert granted(role) == OPERATOR_NAMESPACED | peering
    bindings = [b for b in of_kind(manifests, "RoleBinding") if b["metadata"]["name"] == OPERATOR]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == sorted(watched)
    for binding in bindings:
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": OPERATOR}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": OPERATOR, "namespace": NAMESPACE}]


@pytest.mark.parametrize("name", ["all-namespaces", "ha-peering-cluster"])
def test_cluster_role_only_when_watching_all_namespaces(render: Render, name: str) -> None:
    manifests = render(MATRIX[name])
    assert [r["kind"] for r in roles(manifests, OPERATOR)] == ["ClusterRole"]  # no namespaced Role too
    [cluster_role] = of_kind(manifests, "ClusterRole")
    peering = triples("kopf.dev", resources=("clusterkopfpeerings",), verbs=PEERING) if MATRIX[name].get(
        "replicas", 1) > 1 else set()
    assert granted(cluster_role) == OPERATOR_NAMESPACED | OPERATOR_CLUSTER_ONLY | peering
    [binding] = of_kind(manifests, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == cluster_role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": OPERATOR, "namespace": NAMESPACE}]


def test_finalizer_update_is_opt_in_for_owner_reference_enforcement(render: Render) -> None:
    values: dict[str, Any] = {"rbac": {"ownerReferencesPermissionEnforcement": True}}
    [role] = roles(render(values), OPERATOR)
    extra = granted(role) - OPERATOR_NAMESPACED
    finalizers = tuple(f"{k}/finalizers" for k in KINDS)
    assert extra == triples("federator.io", resources=finalizers, verbs=("update",))


@pytest.mark.parametrize("name", ["defaults", "several-namespaces", "all-namespaces"])
def test_spark_driver_may_only_manage_its_executors(render: Render, name: str) -> None:
    manifests = render(MATRIX[name])
    spark_roles = roles(manifests, "federator-spark")
    assert spark_roles and all(r["kind"] == "Role" for r in spark_roles)
    for role in spark_roles:
        assert granted(role) == SPARK_DRIVER
    spark_bindings = [b for b in of_kind(manifests, "RoleBinding")
                      if b["metadata"]["name"] == "federator-spark"]
    assert len(spark_bindings) == len(spark_roles)
    for binding in spark_bindings:
        ns = binding["metadata"]["namespace"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "federator-spark", "namespace": ns}]
        assert binding["roleRef"]["kind"] == "Role"
