"""Planning a ReplicationTask: deterministic children, secrets by reference only, honest refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from federator.planning.errors import PlanningError
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _cluster_task() -> tuple[str, str, ReplicationTaskSpec]:
    doc = yaml.safe_load((EXAMPLES / "eh-replication-cluster.yaml").read_text(encoding="utf-8"))
    return (
        doc["metadata"]["name"],
        doc["metadata"]["namespace"],
        ReplicationTaskSpec.model_validate(doc["spec"]),
    )


def _plan(**kw: Any) -> Any:
    name, namespace, spec = _cluster_task()
    return plan_replication_task(name=name, namespace=namespace, spec=spec, settings=OperatorSettings(), **kw)


def test_planning_is_deterministic() -> None:
    assert _plan(uid="u-1") == _plan(uid="u-1")


def test_config_map_carries_the_full_spec_and_secret_references() -> None:
    plan = _plan(uid="u-1", generation=3)
    config = json.loads(plan.config_map["data"]["task.json"])
    assert config["metadata"] == {"name": "orders-geo-replication", "namespace": "messaging", "generation": 3}
    assert config["spec"]["source"]["eventHub"]["consumerGroup"] == "federator"
    assert config["spec"]["provenance"]["enqueueTimeProperty"] == "repl-enqueue-time"
    assert config["secretEnv"] == {
        "orders-weu/connectionString": "FEDERATOR_SECRET_orders_weu__connectionString"
    }
    assert config["checkpointLocation"] == "file:///var/lib/federator/checkpoint"


def test_children_are_owned_and_labelled() -> None:
    plan = _plan(uid="u-1")
    owner = plan.config_map["metadata"]["ownerReferences"][0]
    assert owner == {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "name": "orders-geo-replication",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert plan.spark_app.labels["app.kubernetes.io/managed-by"] == "federator"
    assert plan.spark_app.annotations["prometheus.io/scrape"] == "true"


def test_without_a_uid_there_is_no_owner_reference() -> None:
    assert "ownerReferences" not in _plan().config_map["metadata"]


def test_config_map_is_a_valid_kubernetes_object() -> None:
    kubernetes_validate.validate(_plan(uid="u-1").config_map, "1.30.0", strict=True)


def test_checkpoint_defaults_to_the_operator_volume_with_a_per_task_path() -> None:
    name, namespace, spec = _cluster_task()
    bare = spec.model_copy(update={"runtime": spec.runtime.model_copy(update={"checkpoint": None})})
    settings = OperatorSettings(checkpoint_claim="shared-ck")
    plan = plan_replication_task(name=name, namespace=namespace, spec=bare, settings=settings)
    assert plan.spark_app.checkpoint_pvc is not None
    assert (plan.spark_app.checkpoint_pvc.claim_name, plan.spark_app.checkpoint_pvc.sub_path) == (
        "shared-ck",
        "messaging/orders-geo-replication",
    )


@pytest.mark.parametrize("uri", ["file:///mnt/shared/orders", "abfss://ck@acct.dfs.core.windows.net/orders"])
def test_a_checkpoint_uri_is_refused_in_a_cluster_where_no_pod_mounts_it(uri: str) -> None:
    name, namespace, spec = _cluster_task()
    from federator_contract.api.replicationtask import Checkpoint

    on_uri = spec.model_copy(
        update={"runtime": spec.runtime.model_copy(update={"checkpoint": Checkpoint(uri=uri)})}
    )
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name=name, namespace=namespace, spec=on_uri, settings=OperatorSettings())
    assert refused.value.reason == "CheckpointNotMounted"
    assert refused.value.message.startswith("spec.runtime.checkpoint.uri: ")
    local = plan_replication_task(
        name=name, namespace=namespace, spec=on_uri, settings=OperatorSettings(), local=True
    )
    assert local.spark_app.checkpoint_pvc is None
    assert json.loads(local.config_map["data"]["task.json"])["checkpointLocation"] == uri


def test_launcher_comes_from_the_task_then_the_operator() -> None:
    name, namespace, spec = _cluster_task()
    assert _plan().launcher == "kubeflow"
    unset = spec.model_copy(update={"runtime": spec.runtime.model_copy(update={"launcher": None})})
    plan = plan_replication_task(
        name=name, namespace=namespace, spec=unset, settings=OperatorSettings(launcher="apache")
    )
    assert plan.launcher == "apache"


@pytest.mark.parametrize(
    ("example", "reason"),
    [("eh-replication.yaml", "EmulatorOnlyInLocalMode")],
)
def test_local_only_connections_are_refused_with_a_reason(example: str, reason: str) -> None:
    doc = yaml.safe_load((EXAMPLES / example).read_text(encoding="utf-8"))
    spec = ReplicationTaskSpec.model_validate(doc["spec"])
    with pytest.raises(PlanningError) as caught:
        plan_replication_task(name="t", namespace="ns", spec=spec, settings=OperatorSettings())
    assert caught.value.reason == reason
    assert caught.value.message.startswith("spec.source.eventHub.connection points at the built-in emulator")


def test_settings_come_from_the_environment_and_bad_values_name_the_variable() -> None:
    settings = OperatorSettings.from_env(
        {"FEDERATOR_LAUNCHER": "apache", "FEDERATOR_APP_METRICS_PORT": "9100"}
    )
    assert (settings.launcher, settings.app_metrics_port) == ("apache", 9100)
    with pytest.raises(ValueError, match="FEDERATOR_LAUNCHER='yarn'"):
        OperatorSettings.from_env({"FEDERATOR_LAUNCHER": "yarn"})
    with pytest.raises(ValueError, match="FEDERATOR_APP_METRICS_PORT='many'"):
        OperatorSettings.from_env({"FEDERATOR_APP_METRICS_PORT": "many"})


def test_a_checkpoint_store_in_azurite_is_refused_in_a_cluster_and_a_secret_one_is_mounted() -> None:
    name, namespace, spec = _cluster_task()
    store = {"containerName": "checkpoints", "connection": {"emulator": {}}}
    translation = {"consumerGroups": ["orders-app"], "checkpointStore": store}
    local = ReplicationTaskSpec.model_validate(
        {**spec.model_dump(by_alias=True), "checkpointTranslation": translation}
    )
    with pytest.raises(PlanningError) as caught:
        plan_replication_task(name=name, namespace=namespace, spec=local, settings=OperatorSettings())
    assert caught.value.reason == "EmulatorOnlyInLocalMode"
    assert caught.value.message.startswith("spec.checkpointTranslation.checkpointStore.connection ")

    store["connection"] = {"secretRef": {"name": "orders-storage"}}
    cluster = ReplicationTaskSpec.model_validate(
        {**spec.model_dump(by_alias=True), "checkpointTranslation": translation}
    )
    plan = plan_replication_task(name=name, namespace=namespace, spec=cluster, settings=OperatorSettings())
    assert "orders-storage/connectionString" in plan.task_config.secret_env
    assert any(b.secret_name == "orders-storage" for b in plan.spark_app.secrets)
