"""A ReplicationApplication becomes one Spark application whose driver runs its members' queries; a member
task becomes its task ConfigMap only. The pods carry the union of what the members' queries need, in a
fixed order, so that the same members always render the same pods."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federator.planning.application import (
    HOST_APPLICATION_FILE,
    plan_application,
    plan_member_task,
)
from federator.planning.errors import PlanningError
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.launchers.pods import TASK_VOLUME
from federator.planning.task import CHECKPOINT_MOUNT, TASK_LABEL, plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig
from support.orders import orders_task
from support.spark_crds import crd_errors
from support.spark_pods import main_container, pod_templates

NS = "messaging"
SETTINGS = OperatorSettings()
Obj = dict[str, Any]


def member_spec(secret: str = "orders-weu", claim: str | None = None) -> ReplicationTaskSpec:
    """The orders example as a member of application `shared`: its runtime keeps only query settings."""
    raw = copy.deepcopy(orders_task()["spec"])
    raw["source"]["eventHub"]["connection"]["secretRef"]["name"] = secret
    runtime: Obj = {"applicationRef": {"name": "shared"}, "triggerIntervalSeconds": 2}
    if claim is not None:
        runtime["checkpoint"] = {"persistentVolumeClaim": {"claimName": claim}}
    raw["runtime"] = runtime
    return ReplicationTaskSpec.model_validate(raw)


def member(name: str, **kwargs: Any) -> TaskConfig:
    return plan_member_task(
        name=name, namespace=NS, spec=member_spec(**kwargs), settings=SETTINGS
    ).task_config


def application(members: list[TaskConfig], launcher: str = "kubeflow", **spec: Any) -> Obj:
    app_spec = ReplicationApplicationSpec.model_validate({"launcher": launcher, **spec})
    plan = plan_application(
        name="shared", namespace=NS, spec=app_spec, members=members, settings=SETTINGS, uid="u-1"
    )
    return render_spark_application(plan.launcher, plan.spark_app)


def test_a_member_task_gets_its_config_map_labelled_for_the_application_and_no_spark_application() -> None:
    plan = plan_member_task(name="orders", namespace=NS, spec=member_spec(), settings=SETTINGS, uid="t-1")
    assert plan.application == "shared"
    labels = plan.config_map["metadata"]["labels"]
    assert labels["federator.io/application"] == "shared" and labels[TASK_LABEL] == "orders"
    assert plan.config_map["metadata"]["ownerReferences"][0]["kind"] == "ReplicationTask"
    assert not hasattr(plan, "spark_app")
    # The application mounts the claim whole: the member's directory is the one a task of its own used.
    assert plan.task_config.checkpoint_location == (
        f"file://{CHECKPOINT_MOUNT}/{SETTINGS.checkpoint_claim}/{NS}/orders"
    )
    assert set(plan.task_config.secret_env) == {"orders-weu/connectionString"}


def test_an_unshared_task_keeps_its_own_application_and_no_application_label() -> None:
    raw = orders_task()["spec"]
    plan = plan_replication_task(
        name="orders", namespace=NS, spec=ReplicationTaskSpec.model_validate(raw), settings=SETTINGS
    )
    assert "federator.io/application" not in plan.config_map["metadata"]["labels"]
    assert plan.spark_app.config_map == "orders-task"
    assert plan.task_config.checkpoint_location == f"file://{CHECKPOINT_MOUNT}"


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_application_runs_the_host_on_its_members_config_maps_with_its_own_pods(launcher: str) -> None:
    app = application(
        [member("orders")],
        launcher,
        image="ghcr.io/federator/federator-spark:9.9",
        serviceAccountName="messaging-replicator",
        driver={"cores": 2, "memory": "3g"},
        executor={"instances": 3, "cores": 2, "memory": "5g"},
        sparkConf={"spark.sql.shuffle.partitions": "4"},
    )
    assert crd_errors(launcher, app) == []
    assert app["metadata"]["name"] == "shared"
    assert app["metadata"]["labels"]["federator.io/application"] == "shared"
    assert app["metadata"]["ownerReferences"][0]["kind"] == "ReplicationApplication"
    spec = app["spec"]
    if launcher == "kubeflow":
        main, args, conf = spec["mainApplicationFile"], spec["arguments"], spec["sparkConf"]
        assert spec["image"] == "ghcr.io/federator/federator-spark:9.9"
        assert (spec["driver"]["cores"], spec["driver"]["memory"]) == (2, "3g")
        assert (spec["executor"]["instances"], spec["executor"]["memory"]) == (3, "5g")
    else:
        main, args, conf = spec["pyFiles"], spec["driverArgs"], spec["sparkConf"]
        assert conf["spark.kubernetes.container.image"] == "ghcr.io/federator/federator-spark:9.9"
        assert (conf["spark.driver.cores"], conf["spark.executor.instances"]) == ("2", "3")
    assert main == HOST_APPLICATION_FILE
    assert args == ["--task-configmaps", "federator.io/application=shared", "--metrics-port", "9464"]
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    for role, template in pod_templates(launcher, app).items():
        assert template["spec"]["serviceAccountName"] == "messaging-replicator", role
        assert template["metadata"]["labels"]["federator.io/application"] == "shared", role
        # No task config is mounted: the driver reads its members' ConfigMaps through the API.
        assert TASK_VOLUME not in {v["name"] for v in template["spec"]["volumes"]}, role


def test_fifo_scheduling_is_spark_s_default_mode() -> None:
    app = application([member("orders")], scheduling={"mode": "FIFO"})
    assert app["spec"]["sparkConf"]["spark.scheduler.mode"] == "FIFO"


def _env(app: Obj) -> list[Obj]:
    return list(main_container(pod_templates("kubeflow", app)["driver"])["env"])


def test_the_pods_carry_the_union_of_the_members_secrets_in_a_fixed_order() -> None:
    members = [member("a", secret="weu"), member("b", secret="neu"), member("c", secret="weu")]
    app = application(members)
    names = [e["valueFrom"]["secretKeyRef"]["name"] for e in _env(app)]
    assert names == ["neu", "weu"]
    assert application(list(reversed(members))) == app, "the members' order must not change the pods"
    # One member's missing Secret must not keep the pods (and so every other member) from starting.
    assert all(e["valueFrom"]["secretKeyRef"]["optional"] is True for e in _env(app))


def test_a_member_that_brings_a_new_secret_changes_the_pods_and_one_on_known_ones_does_not() -> None:
    before = application([member("a", secret="weu")])
    assert application([member("a", secret="weu"), member("b", secret="weu")]) == before
    assert application([member("a", secret="weu"), member("b", secret="neu")]) != before


def test_each_members_checkpoint_claim_is_mounted_whole_in_every_pod() -> None:
    app = application([member("a"), member("b", claim="team-claim")])
    for role, template in pod_templates("kubeflow", app).items():
        mounts = {m["mountPath"]: m for m in main_container(template)["volumeMounts"]}
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        for claim in (SETTINGS.checkpoint_claim, "team-claim"):
            mount = mounts[f"{CHECKPOINT_MOUNT}/{claim}"]
            assert "subPath" not in mount and not mount.get("readOnly"), role
            assert volumes[mount["name"]]["persistentVolumeClaim"] == {"claimName": claim}, role


def test_an_application_with_no_members_yet_renders_pods_without_task_volumes() -> None:
    app = application([])
    template = pod_templates("kubeflow", app)["driver"]
    assert _env(app) == []
    assert not [v for v in template["spec"]["volumes"] if "persistentVolumeClaim" in v]


def test_the_pod_policy_refuses_an_application_s_image_at_its_field() -> None:
    spec = ReplicationApplicationSpec.model_validate({"image": "evil.example/miner:1"})
    with pytest.raises(PlanningError) as refused:
        plan_application(name="shared", namespace=NS, spec=spec, members=[], settings=SETTINGS)
    assert refused.value.reason == "ImageNotAllowed"
    assert refused.value.message.startswith("spec.image: ")
