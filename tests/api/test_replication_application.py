"""ReplicationApplication: the application holds what the JVMs need, its member tasks what their queries
need. A task that names an application in `spec.runtime.applicationRef` cannot also set what belongs to the
application: the API server refuses it (CEL), so do `federator validate` offline and the operator's model."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from federator.crds.generate import crd
from federator.validation import check_object
from federator.validation.semantic import semantic_problems
from federator_contract.api.kinds import BY_KIND, REPLICATION_APPLICATION, REPLICATION_TASK
from federator_contract.api.replicationapplication import (
    ReplicationApplicationSpec,
    ReplicationApplicationStatus,
)
from federator_contract.api.replicationtask import ReplicationTaskSpec, Runtime

API_VERSION = "federator.io/v1alpha1"
MEMBER = {"applicationRef": {"name": "shared"}}
# What a member task leaves to its application, with a value for each.
APPLICATION_SETTINGS: dict[str, Any] = {
    "launcher": "apache",
    "image": "ghcr.io/federator/federator-spark:dev",
    "serviceAccountName": "orders-replicator",
    "driver": {"cores": 2},
    "executor": {"instances": 2},
    "sparkConf": {"spark.sql.shuffle.partitions": "4"},
}


def hub(namespace: str) -> dict[str, Any]:
    return {"connection": {"emulator": {"namespace": namespace}}, "eventHubName": "orders"}


def task_spec(**runtime: Any) -> dict[str, Any]:
    return {
        "source": {"eventHub": hub("a")},
        "targets": [{"name": "copy", "eventHub": hub("b")}],
        "runtime": runtime,
    }


def task(**runtime: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ReplicationTask",
        "metadata": {"name": "orders"},
        "spec": task_spec(**runtime),
    }


def application(name: str = "shared", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ReplicationApplication",
        "metadata": {"name": name},
        "spec": spec,
    }


def mirror(**runtime: Any) -> dict[str, Any]:
    members = [{"name": n, "connection": {"emulator": {"namespace": n}}} for n in ("a", "b")]
    spec = {
        "pattern": "allActive",
        "topicName": "orders",
        "members": members,
        "taskTemplate": {"runtime": runtime},
    }
    return {"apiVersion": API_VERSION, "kind": "ServiceBusMirror", "metadata": {"name": "m"}, "spec": spec}


def problems(obj: dict[str, Any]) -> list[str]:
    return [str(p) for p in check_object(obj).problems]


def test_a_member_task_with_a_driver_is_refused_naming_spec_runtime_driver() -> None:
    assert problems(task(**MEMBER, driver={"cores": 2, "memory": "4g"})) == [
        "spec.runtime.driver: driver belongs to the ReplicationApplication named in applicationRef: "
        "set it there, not here"
    ]


@pytest.mark.parametrize("field", list(APPLICATION_SETTINGS))
def test_every_setting_of_the_application_is_refused_on_a_member_task(field: str) -> None:
    found = check_object(task(**MEMBER, **{field: APPLICATION_SETTINGS[field]})).problems
    assert [(p.path, p.layer) for p in found] == [(f"spec.runtime.{field}", "cel")]
    assert found[0].message.startswith(f"{field} belongs to the ReplicationApplication")


@pytest.mark.parametrize("field", list(APPLICATION_SETTINGS))
def test_the_operator_refuses_a_member_task_with_an_application_setting_too(field: str) -> None:
    # The operator reads the spec through the model; it must not run what the API server would refuse.
    spec = task_spec(**MEMBER, **{field: APPLICATION_SETTINGS[field]})
    with pytest.raises(ValidationError, match=f"{field} belongs to the ReplicationApplication"):
        ReplicationTaskSpec.model_validate(spec)
    [problem] = semantic_problems(REPLICATION_TASK, spec)
    assert problem.path == "spec.runtime" and f"{field} belongs to" in problem.message


def test_without_an_application_a_task_still_sets_its_own_spark_settings() -> None:
    assert problems(task(**APPLICATION_SETTINGS)) == []


def test_a_member_task_keeps_its_query_settings_and_reads_default_resources() -> None:
    query = {
        "triggerIntervalSeconds": 2,
        "maxEventsPerTrigger": 500,
        "checkpoint": {"uri": "file:///tmp/federator/orders"},
    }
    verdict = check_object(task(**MEMBER, **query))
    assert verdict.problems == [] and verdict.admitted is not None
    runtime = ReplicationTaskSpec.model_validate(verdict.admitted["spec"]).runtime
    assert runtime.application_ref is not None and runtime.application_ref.name == "shared"
    assert (runtime.trigger_interval_seconds, runtime.max_events_per_trigger) == (2, 500)
    # The task's own resources are the defaults, unused: the application's pods are what runs.
    assert (runtime.driver.cores, runtime.executor.instances) == (1, 1)


def test_a_member_task_may_keep_the_resource_defaults_a_cluster_stored_before_applications() -> None:
    # The API server wrote `driver` and `executor` defaults into every task it stored; such a task must be
    # able to join an application without removing them first (a mirror's server-side apply cannot).
    stored = {
        "driver": {"cores": 1, "memory": "1g"},
        "executor": {"cores": 1, "memory": "1g", "instances": 1},
    }
    assert problems(task(**MEMBER, **stored)) == []
    ReplicationTaskSpec.model_validate(task_spec(**MEMBER, **stored))
    assert problems(task(**MEMBER, executor={"instances": 1, "memory": "2g"})) == [
        "spec.runtime.executor: executor belongs to the ReplicationApplication named in applicationRef: "
        "set it there, not here"
    ]


def test_an_application_ref_names_an_object_by_its_kubernetes_name() -> None:
    assert problems(task(applicationRef={"name": "Shared_App"})) == [
        "spec.runtime.applicationRef.name: 'Shared_App' does not match the pattern "
        "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    ]
    assert problems(task(applicationRef={})) == [
        "spec.runtime.applicationRef.name: required field is missing"
    ]


def test_a_mirror_template_joins_an_application_the_same_way() -> None:
    assert problems(mirror(**MEMBER, triggerIntervalSeconds=1)) == []
    assert problems(mirror(**MEMBER, sparkConf={"spark.sql.shuffle.partitions": "4"})) == [
        "spec.taskTemplate.runtime.sparkConf: sparkConf belongs to the ReplicationApplication named in "
        "applicationRef: set it there, not here"
    ]


def test_an_application_with_a_credential_in_spark_conf_is_refused_as_a_task_is() -> None:
    key = "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"
    [refused_app] = check_object(application(sparkConf={key: "c2VjcmV0"})).problems
    [refused_task] = check_object(task(sparkConf={key: "c2VjcmV0"})).problems
    assert (refused_app.path, refused_task.path) == ("spec.sparkConf", "spec.runtime.sparkConf")
    assert refused_app.message == refused_task.message
    assert "looks like a credential" in refused_app.message and "c2VjcmV0" not in refused_app.message
    with pytest.raises(ValidationError, match="looks like a credential"):
        ReplicationApplicationSpec.model_validate({"sparkConf": {key: "c2VjcmV0"}})


def test_an_empty_application_runs_with_the_operators_settings_and_fair_pools() -> None:
    verdict = check_object(application())
    assert verdict.problems == [] and verdict.admitted is not None
    assert verdict.admitted["spec"] == {
        "driver": {"cores": 1, "memory": "1g"},
        "executor": {"cores": 1, "memory": "1g", "instances": 1},
        "scheduling": {"mode": "FAIR"},
    }
    spec = ReplicationApplicationSpec.model_validate(verdict.admitted["spec"])
    assert (spec.launcher, spec.image, spec.service_account_name, spec.spark_conf) == (None, None, None, None)
    assert (spec.driver.cores, spec.driver.memory, spec.executor.instances) == (1, "1g", 1)


def test_an_application_takes_the_settings_a_task_runtime_takes_with_the_same_checks() -> None:
    settings = {**APPLICATION_SETTINGS, "driver": {"cores": 2, "memory": "4g"}}
    spec = ReplicationApplicationSpec.model_validate({**settings, "scheduling": {"mode": "FIFO"}})
    runtime = Runtime.model_validate(settings)
    assert spec.model_dump(exclude={"scheduling"}) == runtime.model_dump(
        include=set(ReplicationApplicationSpec.model_fields) - {"scheduling"}
    )
    assert problems(application(driver={"memory": "4 GB"})) == [
        "spec.driver.memory: '4 GB' does not match the pattern ^[1-9][0-9]*[kmgt]$"
    ]
    assert problems(application(scheduling={"mode": "RoundRobin"})) == [
        "spec.scheduling.mode: must be one of: FAIR, FIFO (got 'RoundRobin')"
    ]


def test_a_scheduler_mode_in_spark_conf_that_contradicts_scheduling_is_a_warning() -> None:
    verdict = check_object(application(sparkConf={"spark.scheduler.mode": "FIFO"}))
    assert verdict.problems == []
    assert [(w.path, w.layer) for w in verdict.warnings] == [
        ("spec.sparkConf.spark.scheduler.mode", "warning")
    ]
    assert "contradicts scheduling.mode FAIR" in verdict.warnings[0].message
    agreeing = application(sparkConf={"spark.scheduler.mode": "fifo"}, scheduling={"mode": "FIFO"})
    assert check_object(agreeing).warnings == []


def test_the_kind_is_namespaced_with_its_short_name_and_member_column() -> None:
    manifest = crd(REPLICATION_APPLICATION)
    names = manifest["spec"]["names"]
    assert (names["kind"], names["plural"], names["singular"], names["shortNames"]) == (
        "ReplicationApplication",
        "replicationapplications",
        "replicationapplication",
        ["rapp"],
    )
    assert (
        manifest["spec"]["scope"] == "Namespaced"
        and BY_KIND["ReplicationApplication"] is REPLICATION_APPLICATION
    )
    columns = {c["name"]: c["jsonPath"] for c in manifest["spec"]["versions"][0]["additionalPrinterColumns"]}
    assert columns["Members"] == ".status.memberCount"


def test_an_application_name_leaves_room_for_its_driver_pod_name() -> None:
    assert problems(application("a" * 50)) == []
    assert problems(application("a" * 51)) == [
        "metadata.name: a ReplicationApplication name has at most 50 characters"
    ]


STATUS: dict[str, Any] = {
    "observedGeneration": 4,
    "conditions": [
        {
            "type": "Ready",
            "status": "False",
            "reason": "MembersNotReady",
            "message": "1 of 2 member tasks is not ready: orders-shared",
            "observedGeneration": 4,
            "lastTransitionTime": "2026-11-29T12:00:00Z",
        }
    ],
    "members": [{"name": "orders-shared", "ready": False}, {"name": "telemetry-shared", "ready": True}],
    "memberCount": 2,
    "sparkApplication": {"apiVersion": "sparkoperator.k8s.io/v1beta2", "name": "shared", "state": "RUNNING"},
    "driverPod": "shared-driver",  # a field a newer operator may write
}


def test_the_status_round_trips_unchanged_through_its_model() -> None:
    status = ReplicationApplicationStatus.model_validate(STATUS)
    assert [(m.name, m.ready) for m in status.members] == [
        ("orders-shared", False),
        ("telemetry-shared", True),
    ]
    assert status.member_count == 2 and status.spark_application is not None
    assert status.model_dump(mode="json", by_alias=True, exclude_none=True) == STATUS


def test_the_status_lists_a_bounded_number_of_members() -> None:
    many = [{"name": f"t{i:03}", "ready": True} for i in range(257)]
    with pytest.raises(ValidationError, match="at most 256 items"):
        ReplicationApplicationStatus.model_validate({"members": many, "memberCount": 257})
    listed = ReplicationApplicationStatus.model_validate({"members": many[:256], "memberCount": 257})
    assert len(listed.members) == 256 and listed.member_count == 257


def test_the_installers_pod_policy_applies_to_an_application_as_to_a_task() -> None:
    found = check_object(application(image="evil.example/miner:1", sparkConf={"spark.kubernetes.x": "y"}))
    assert [(p.path, p.layer) for p in found.problems] == [
        ("spec.image", "policy"),
        ("spec.sparkConf.spark.kubernetes.x", "policy"),
    ]
    assert "not allowed by the installer's pod policy" in found.problems[0].message
