"""Before a task's Spark pods exist, the operator checks what they need from the namespace: the service
account workload identity signs them in as (a Stalled reason of its own until it is right), and whether
the checkpoint claim can be shared by pods on several nodes (the informative CheckpointVolumeShared)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator.planning.task import plan_replication_task
from federator.reconcile.taskpods import judge_checkpoint_claim, judge_service_account
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.kube import KubeServer
from support.polling import eventually
from support.spark_pods import pod_templates

NS = "default"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eh-replication-cluster.yaml"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
ACCOUNTS = f"/api/v1/namespaces/{NS}/serviceaccounts"
CLAIMS = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"
ANNOTATION = "azure.workload.identity/client-id"
CLIENT_ID = "6f1c2a4e-3b5d-4c7e-9f80-1a2b3c4d5e6f"  # the example target's workloadIdentity.clientId
OTHER_ID = "0a0b0c0d-1111-4222-8333-444455556666"
MERGE = "application/merge-patch+json"


def task(name: str = "orders", **runtime: Any) -> dict[str, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["metadata"] = {"name": name, "namespace": NS}
    doc["spec"]["runtime"].update(runtime)
    return doc


def with_secret_target(doc: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(doc)
    changed["spec"]["targets"][0]["eventHub"]["connection"] = {"secretRef": {"name": "orders-weu"}}
    return changed


def create_secret(kube: KubeServer) -> None:
    secret = {"metadata": {"name": "orders-weu"}, "stringData": {"connectionString": "Endpoint=sb://x/;k=v"}}
    kube.request("POST", f"/api/v1/namespaces/{NS}/secrets", {"apiVersion": "v1", "kind": "Secret", **secret})


def account(name: str, client_id: str | None) -> dict[str, Any]:
    annotations = {ANNOTATION: client_id} if client_id else {}
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "annotations": annotations},
    }


def claim(name: str, *modes: str) -> dict[str, Any]:
    spec = {"accessModes": list(modes), "resources": {"requests": {"storage": "10Gi"}}}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def condition(kube: KubeServer, type_: str, name: str = "orders") -> dict[str, Any]:
    conditions = ((get(kube, f"{RT}/{name}") or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), {})


def ready_reason(kube: KubeServer, name: str = "orders") -> str | None:
    return condition(kube, "Ready", name).get("reason")


def test_workload_identity_waits_for_its_service_account_then_labels_the_pods(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    create_secret(kube)
    kube.request("POST", RT, task())

    eventually(lambda: ready_reason(kube) == "ServiceAccountNotFound")
    stalled = condition(kube, "Stalled")
    assert stalled["status"] == "True" and "ServiceAccount default/federator-spark" in stalled["message"]
    assert get(kube, f"{APPS}/orders") is None, "no pods before they can sign in"

    kube.request("POST", ACCOUNTS, account("federator-spark", None))
    eventually(lambda: ready_reason(kube) == "WorkloadIdentityClientIdMissing")
    assert ANNOTATION in condition(kube, "Stalled")["message"]

    kube.request(
        "PATCH", f"{ACCOUNTS}/federator-spark", {"metadata": {"annotations": {ANNOTATION: OTHER_ID}}}, MERGE
    )
    eventually(lambda: ready_reason(kube) == "WorkloadIdentityClientIdMismatch")
    message = condition(kube, "Stalled")["message"]
    assert "spec.targets[0]" in message and CLIENT_ID in message and OTHER_ID in message

    kube.request(
        "PATCH", f"{ACCOUNTS}/federator-spark", {"metadata": {"annotations": {ANNOTATION: CLIENT_ID}}}, MERGE
    )
    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")
    app = get(kube, f"{APPS}/orders")
    assert app is not None
    for template in pod_templates("kubeflow", app).values():
        assert template["metadata"]["labels"]["azure.workload.identity/use"] == "true"
        assert template["spec"]["serviceAccountName"] == "federator-spark"
    assert kube.server_errors() == []


def test_the_tasks_own_service_account_is_the_one_checked(federator_operator: KubeServer) -> None:
    kube = federator_operator
    create_secret(kube)
    kube.request("POST", ACCOUNTS, account("federator-spark", CLIENT_ID))  # the default: not this task's
    kube.request("POST", RT, task(serviceAccountName="orders-replicator"))
    eventually(lambda: ready_reason(kube) == "ServiceAccountNotFound")
    assert "default/orders-replicator" in condition(kube, "Stalled")["message"]
    kube.request("POST", ACCOUNTS, account("orders-replicator", CLIENT_ID.upper()))  # GUIDs ignore case
    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")
    app = get(kube, f"{APPS}/orders")
    assert app is not None and app["spec"]["driver"]["serviceAccount"] == "orders-replicator"


def test_a_task_without_workload_identity_needs_no_annotated_account(federator_operator: KubeServer) -> None:
    kube = federator_operator
    create_secret(kube)
    kube.request("POST", RT, with_secret_target(task()))
    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")
    app = get(kube, f"{APPS}/orders")
    assert app is not None
    for template in pod_templates("kubeflow", app).values():
        assert "azure.workload.identity/use" not in template["metadata"]["labels"]


def test_the_checkpoint_claim_is_reported_shared_or_not(federator_operator: KubeServer) -> None:
    kube = federator_operator
    create_secret(kube)
    kube.request("POST", RT, with_secret_target(task()))

    eventually(lambda: condition(kube, "CheckpointVolumeShared").get("reason") == "CheckpointVolumeNotFound")
    assert condition(kube, "CheckpointVolumeShared")["status"] == "Unknown"

    kube.request("POST", CLAIMS, claim("federator-checkpoints", "ReadWriteOnce"))
    eventually(lambda: condition(kube, "CheckpointVolumeShared").get("reason") == "CheckpointVolumeNotShared")
    shared = condition(kube, "CheckpointVolumeShared")
    assert shared["status"] == "False"
    assert "ReadWriteOnce, not ReadWriteMany" in shared["message"] and "azurefile-csi" in shared["message"]
    # Informative: the task is not Stalled for it.
    assert ready_reason(kube) == "SparkApplicationPending" and condition(kube, "Stalled")["status"] == "False"

    kube.request("DELETE", f"{CLAIMS}/federator-checkpoints")
    kube.request("POST", CLAIMS, claim("federator-checkpoints", "ReadWriteMany"))
    eventually(lambda: condition(kube, "CheckpointVolumeShared").get("status") == "True")
    assert condition(kube, "CheckpointVolumeShared")["reason"] == "ReadWriteMany"


# ------------------------------------------------------------------------------ the judgements alone


def _plan(doc: dict[str, Any]) -> Any:
    spec = ReplicationTaskSpec.model_validate(doc["spec"])
    return plan_replication_task(
        name="orders", namespace=NS, spec=spec, settings=OperatorSettings()
    ).spark_app


def test_a_connection_without_client_id_takes_the_annotation() -> None:
    doc = task()
    del doc["spec"]["targets"][0]["eventHub"]["connection"]["workloadIdentity"]["clientId"]
    assert judge_service_account(_plan(doc), account("federator-spark", OTHER_ID)) is None
    assert judge_service_account(_plan(doc), account("federator-spark", None)) is not None


def test_every_workload_identity_connection_must_match_the_annotation() -> None:
    doc = task()
    doc["spec"]["source"]["eventHub"]["connection"] = {
        "workloadIdentity": {
            "fullyQualifiedNamespace": "contoso-weu.servicebus.windows.net",
            "clientId": OTHER_ID,
        }
    }
    found = judge_service_account(_plan(doc), account("federator-spark", CLIENT_ID))
    assert found is not None
    reason, message = found
    assert reason == "WorkloadIdentityClientIdMismatch" and "spec.source.eventHub.connection" in message


@pytest.mark.parametrize(
    ("claim_doc", "status", "reason", "said"),
    [
        (None, "Unknown", "CheckpointVolumeNotFound", "stay Pending"),
        (claim("c", "ReadWriteOnce"), "False", "CheckpointVolumeNotShared", "must run on one node"),
        (claim("c", "ReadWriteOncePod"), "False", "CheckpointVolumeNotShared", "only one pod can mount it"),
        (claim("c", "ReadWriteOnce", "ReadOnlyMany"), "False", "CheckpointVolumeNotShared", "one node"),
        (claim("c", "ReadWriteMany"), "True", "ReadWriteMany", "any node"),
        # Bound: the volume's modes (status) count, not only what was asked.
        (
            {**claim("c", "ReadWriteOnce"), "status": {"accessModes": ["ReadWriteMany"]}},
            "True",
            "ReadWriteMany",
            "",
        ),
    ],
)
def test_the_claims_access_modes_decide(
    claim_doc: dict[str, Any] | None, status: str, reason: str, said: str
) -> None:
    update = judge_checkpoint_claim("team-a/c", 3, claim_doc)
    assert (update.type, update.status, update.reason) == ("CheckpointVolumeShared", status, reason)
    assert said in update.message and "PersistentVolumeClaim team-a/c" in update.message


def test_the_kubectl_plugin_shows_an_unshared_claim_as_a_warning() -> None:
    from federator.kubectl.model import OK, WARNING, ConditionView

    def severity(status: str) -> int:
        return ConditionView("CheckpointVolumeShared", status, "r", "m", "2026-11-01T00:00:00Z").severity

    assert (severity("False"), severity("True")) == (WARNING, OK)


def test_an_image_outside_the_pod_policy_stalls_the_task_and_no_pod_is_asked_for(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    create_secret(kube)
    kube.request("POST", RT, with_secret_target(task(image="evil.example/miner:latest")))
    eventually(lambda: ready_reason(kube) == "ImageNotAllowed")
    stalled = condition(kube, "Stalled")
    assert stalled["status"] == "True" and stalled["message"].startswith("spec.runtime.image: ")
    assert get(kube, f"{APPS}/orders") is None
