"""kubectl (the project-installed binary) works against the faithful emulator."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.kube import KubeServer, Runner
from support.resources import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SHORT = {
    "ReplicationTask": "rt",
    "ServiceBusMirror": "sbm",
    "FailoverGroup": "fg",
    "ReplicationApplication": "rapp",
    "Secret": "secret",
    "ConfigMap": "configmap",
}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def test_apply_crds(kubectl: Runner) -> None:
    done = kubectl("apply", "-f", "crds/")
    assert sorted(done.stdout.split("\n")[:-1]) == [
        "customresourcedefinition.apiextensions.k8s.io/failovergroups.federator.io created",
        "customresourcedefinition.apiextensions.k8s.io/replicationapplications.federator.io created",
        "customresourcedefinition.apiextensions.k8s.io/replicationtasks.federator.io created",
        "customresourcedefinition.apiextensions.k8s.io/servicebusmirrors.federator.io created",
    ]
    crds = json.loads(kubectl("get", "crd", "-o", "json").stdout)
    assert crds["kind"] == "List"
    assert {c["spec"]["names"]["kind"] for c in crds["items"]} == {
        "ReplicationTask",
        "ServiceBusMirror",
        "FailoverGroup",
        "ReplicationApplication",
    }
    again = kubectl("apply", "-f", "crds/")
    assert again.stdout.count("unchanged") == 4


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_apply_example_creates_every_document(kubectl: Runner, example: Path) -> None:
    docs = documents(example)
    done = kubectl("apply", "-f", str(example))
    assert done.stdout.count(" created") == len(docs), done.stdout
    for doc in docs:
        namespace = doc["metadata"].get("namespace", "default")
        got = json.loads(
            kubectl("get", SHORT[doc["kind"]], doc["metadata"]["name"], "-n", namespace, "-o", "json").stdout
        )
        assert (got["kind"], got["metadata"]["namespace"]) == (doc["kind"], namespace)
        assert got.get("spec") == doc.get("spec")


def test_list_every_example_back_by_short_name(kubectl: Runner) -> None:
    expected = Counter(d["kind"] for p in EXAMPLES for d in documents(p))
    for path in EXAMPLES:
        kubectl("apply", "-f", str(path))
    listed = json.loads(kubectl("get", "rt,sbm,fg,rapp,secrets,configmaps", "-A", "-o", "json").stdout)
    assert Counter(i["kind"] for i in listed["items"]) == expected


def test_get_table_shows_client_side_columns_only(kubectl: Runner) -> None:
    kubectl("apply", "-f", "examples/eh-replication.yaml")
    table = kubectl("get", "rt").stdout.splitlines()
    # kmock serves no server-side Table, so kubectl prints NAME/AGE, not the CRD's printer columns.
    assert table[0].split() == ["NAME", "AGE"]
    assert table[1].split()[0] == "orders-replication"


def test_patch_status_subresource_and_read_it_back(kubectl: Runner, kube: KubeServer) -> None:
    kubectl("apply", "-f", "examples/eh-replication.yaml")
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": "Running",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    kubectl(
        "patch",
        "rt",
        "orders-replication",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": [condition]}}),
    )
    got = kubectl("get", "rt", "orders-replication", "-o", "jsonpath={.status.conditions[0].type}")
    assert got.stdout == "Ready"
    # ...and the main endpoint cannot overwrite it, as on a real API server.
    kubectl("patch", "rt", "orders-replication", "--type=merge", "-p", '{"status": {"conditions": []}}')
    got = kubectl("get", "rt", "orders-replication", "-o", "jsonpath={.status.conditions[0].reason}")
    assert got.stdout == "Running"


def test_kubectl_wait_sees_a_condition_set_later(kubectl: Runner, kube: KubeServer) -> None:
    kubectl("apply", "-f", "examples/eh-replication.yaml")
    path = "/apis/federator.io/v1alpha1/namespaces/default/replicationtasks/orders-replication/status"
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": "Running",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    kube.request("PATCH", path, {"status": {"conditions": [condition]}}, "application/merge-patch+json")
    done = kubectl("wait", "rt/orders-replication", "--for=condition=Ready", "--timeout=10s")
    assert "condition met" in done.stdout


def test_delete_removes_the_object(kubectl: Runner) -> None:
    kubectl("apply", "-f", "examples/failover-group.yaml")
    name = documents(ROOT / "examples" / "failover-group.yaml")[0]["metadata"]["name"]
    kubectl("delete", "fg", name)
    missing = kubectl("get", "fg", name, check=False)
    assert missing.returncode != 0
    assert "(NotFound)" in missing.stderr
