"""A task of its own that follows a FailoverGroup runs, in a cluster, in a host of its own
(planning/follower.py): a switch of the group rewrites its task ConfigMap and nothing else, so only its
query restarts on the new member. A task that follows no group, and any task in local mode, is planned as
before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator.planning.follower import TASK_HOST_LABEL, plan_task
from federator.planning.following import resolve_following
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.launchers.pods import TASK_VOLUME
from federator.planning.task import TaskPlan, plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.spark_pods import main_container, pod_templates

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
Obj = dict[str, Any]


def _example(path: str, kind: str) -> Obj:
    docs = yaml.safe_load_all((EXAMPLES / path).read_text(encoding="utf-8"))
    return next(doc for doc in docs if doc and doc["kind"] == kind)


GROUP = _example("failover-group-cluster.yaml", "FailoverGroup")
TASK = _example("failover-group-cluster.yaml", "ReplicationTask")
NAME, NAMESPACE = TASK["metadata"]["name"], TASK["metadata"]["namespace"]


def _group_on(member: str) -> Obj:
    """The example's group with producers and consumers on ``member``."""
    status = {"producerMember": member, "consumerMember": member, "consumerSince": "2026-11-29T12:00:00Z"}
    return {**GROUP, "status": status}


def _plan(member: str, spec: Obj | None = None, **kw: Any) -> TaskPlan:
    parsed = ReplicationTaskSpec.model_validate(spec or TASK["spec"])
    following = resolve_following(parsed, {"orders": _group_on(member)})
    return plan_task(
        name=NAME,
        namespace=NAMESPACE,
        spec=following.spec,
        settings=OperatorSettings(),
        following=following,
        uid="u-1",
        **kw,
    )


def _rendered(plan: TaskPlan, launcher: str) -> Obj:
    return render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_a_switch_changes_the_task_config_and_not_the_spark_application(launcher: str) -> None:
    before, after = _plan("primary"), _plan("secondary")
    assert _rendered(before, launcher) == _rendered(after, launcher)
    members = [json.loads(p.config_map["data"]["task.json"])["followedMembers"] for p in (before, after)]
    assert members == [
        {"spec.source.serviceBus": "orders/primary"},
        {"spec.source.serviceBus": "orders/secondary"},
    ]


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_host_watches_its_own_config_map_and_no_mounted_one(launcher: str) -> None:
    plan = _plan("primary")
    app = _rendered(plan, launcher)
    args = app["spec"]["arguments"] if launcher == "kubeflow" else app["spec"]["driverArgs"]
    selector = args[args.index("--task-configmaps") + 1]
    assert selector == f"{TASK_HOST_LABEL}={NAME}"
    assert plan.config_map["metadata"]["labels"][TASK_HOST_LABEL] == NAME
    assert args[args.index("--metrics-port") + 1] == "9464"
    assert plan.spark_app.main_file == "local:///opt/federator/host.py"
    for template in pod_templates(launcher, app).values():
        assert TASK_VOLUME not in {v["name"] for v in template["spec"]["volumes"]}


def test_the_pods_carry_every_members_secret_optionally_and_name_no_member() -> None:
    plan = _plan("primary")
    app = _rendered(plan, "kubeflow")
    driver = pod_templates("kubeflow", app)["driver"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in main_container(driver)["env"]}
    assert {(r["name"], r["key"], r["optional"]) for r in refs.values()} == {
        ("archive-namespace", "connectionString", True),
        ("primary-namespace", "connectionString", True),
        ("secondary-namespace", "connectionString", True),
    }
    assert "federator.io/following" not in json.dumps(app)
    config = json.loads(plan.config_map["data"]["task.json"])
    assert set(config["secretEnv"]) == {
        "archive-namespace/connectionString",
        "primary-namespace/connectionString",
    }, "the task config names only the member used now"


def test_its_pods_are_labelled_as_the_application_they_run_and_the_resource_as_the_tasks() -> None:
    app = _rendered(_plan("primary"), "apache")
    labels = app["metadata"]["labels"]
    assert labels["federator.io/replication-task"] == NAME
    assert "federator.io/application" not in labels, "a ReplicationApplication's pass deletes by it"
    for template in pod_templates("apache", app).values():
        assert template["metadata"]["labels"]["federator.io/application"] == NAME


def test_a_host_of_one_task_reads_without_the_bound_it_puts_on_a_shared_applications_members() -> None:
    conf = _plan("primary").spark_app.spark_conf
    assert conf["spark.federator.member.maxEventsPerTrigger"] == "0"
    assert conf["spark.federator.member.triggerIntervalMs"] == "0", (
        "nor paced: a switch's first batch at once"
    )
    assert conf["spark.sql.streaming.stopGracefullyOnShutdown"] == "true", "the app's defaults stay"


def test_moving_between_the_forms_keeps_the_name_and_the_checkpoint() -> None:
    hosted = _plan("primary")
    mounted = _plan("primary", local=True)
    assert mounted.spark_app.config_map is not None, "local mode plans the mounted form"
    assert hosted.spark_app.name == mounted.spark_app.name == NAME
    assert hosted.spark_app.checkpoint_pvc == mounted.spark_app.checkpoint_pvc
    assert hosted.task_config.checkpoint_location == mounted.task_config.checkpoint_location


def test_a_task_that_follows_nothing_is_planned_as_before() -> None:
    doc = yaml.safe_load((EXAMPLES / "eh-replication-cluster.yaml").read_text(encoding="utf-8"))
    spec = ReplicationTaskSpec.model_validate(doc["spec"])
    arguments: Any = {"name": "t", "namespace": "ns", "spec": spec, "settings": OperatorSettings()}
    following = resolve_following(spec, {})
    assert plan_task(**arguments, following=following) == plan_replication_task(**arguments)
