"""A tenant who may create ReplicationTasks, but not pods, tries to get pods of its own making through
one: an image of its choice, another workload's ServiceAccount, or Spark settings that mount a host path,
preload a library, add environment variables or re-authenticate the driver. The installer's pod policy
(chart `spark.podPolicy`, validation/pod_policy.py) refuses each, with a reason naming the rule, in the
operator's plan for either launcher (Stalled) and in `federator validate`, at the field's path; what a
team's task legitimately sets still runs. The same attempts through a ReplicationApplication (one Spark
application shared by the namespace's member tasks, its pod settings at `spec.<field>`) are refused alike."""

from __future__ import annotations

from typing import Any

import pytest
from tenant_manifests import NAMESPACE, replication_task

from federator import reasons
from federator.planning.application import plan_application
from federator.planning.errors import PlanningError
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation import check_object, pod_policy
from federator_contract.api.base import API_VERSION
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec

# The installer of a multi-tenant cluster: team-a may run as its own replicator account only.
POLICY = OperatorSettings(allowed_service_accounts="team-a-replicator")

ATTEMPTS = [
    pytest.param(
        {"image": "evil.example/miner:latest"}, reasons.IMAGE_NOT_ALLOWED, "spec.runtime.image", id="image"
    ),
    pytest.param(
        {"image": "ghcr.io/federator/federator-spark-evil:0.1.0"},
        reasons.IMAGE_NOT_ALLOWED,
        "spec.runtime.image",
        id="image-with-the-allowed-repository-as-prefix",
    ),
    pytest.param(
        {"serviceAccountName": "payments-admin"},
        reasons.SERVICE_ACCOUNT_NOT_ALLOWED,
        "spec.runtime.serviceAccountName",
        id="another-workloads-account",
    ),
    *[
        pytest.param(
            {"sparkConf": {key: value}},
            reasons.SPARK_CONF_NOT_ALLOWED,
            f"spec.runtime.sparkConf.{key}",
            id=key,
        )
        for key, value in [
            ("spark.kubernetes.driver.volumes.hostPath.root.mount.path", "/host"),
            ("spark.kubernetes.driver.volumes.hostPath.root.options.path", "/"),
            ("spark.executorEnv.LD_PRELOAD", "/tmp/evil.so"),
            ("spark.kubernetes.driverEnv.AZURE_CLIENT_ID", "6f1c2a4e-3b5d-4c7e-9f80-1a2b3c4d5e6f"),
            ("spark.kubernetes.authenticate.driver.serviceAccountName", "payments-admin"),
            ("spark.kubernetes.container.image", "evil.example/miner:latest"),
            ("spark.kubernetes.driver.podTemplateFile", "/tmp/privileged.yaml"),
            ("spark.kubernetes.namespace", "payments"),
            ("spark.yarn.appMasterEnv.PATH", "/tmp"),
        ]
    ],
]


def spec_of(runtime: dict[str, Any]) -> ReplicationTaskSpec:
    return ReplicationTaskSpec.model_validate(replication_task(runtime=runtime)["spec"])


@pytest.mark.parametrize(("runtime", "reason", "path"), ATTEMPTS)
def test_the_operator_refuses_pods_the_installer_does_not_allow(
    runtime: dict[str, Any], reason: str, path: str
) -> None:
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec_of(runtime), settings=POLICY)
    assert refused.value.reason == reason
    assert refused.value.message.startswith(f"{path}: ")


def validated(manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(path, layer) of each problem `federator validate` reports where the installer's policy is set."""
    monkeypatch.setenv("FEDERATOR_ALLOWED_SERVICE_ACCOUNTS", POLICY.allowed_service_accounts)
    pod_policy.cache_clear()
    try:
        verdict = check_object(manifest)
    finally:
        pod_policy.cache_clear()
    return [(p.path, p.layer) for p in verdict.problems]


@pytest.mark.parametrize(("runtime", "reason", "path"), ATTEMPTS)
def test_validate_reports_the_same_refusal_at_the_fields_path(
    runtime: dict[str, Any], reason: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert validated(replication_task(runtime=runtime), monkeypatch) == [(path, "policy")]


def shared_application(runtime: dict[str, Any]) -> dict[str, Any]:
    """The tenant's ReplicationApplication, with the pod settings a task's runtime would have."""
    metadata = {"name": "shared", "namespace": NAMESPACE}
    return {
        "apiVersion": API_VERSION,
        "kind": "ReplicationApplication",
        "metadata": metadata,
        "spec": runtime,
    }


@pytest.mark.parametrize(("runtime", "reason", "path"), ATTEMPTS)
def test_a_shared_application_gets_no_pods_the_installer_does_not_allow_either(
    runtime: dict[str, Any], reason: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = path.replace("spec.runtime.", "spec.", 1)
    spec = ReplicationApplicationSpec.model_validate(shared_application(runtime)["spec"])
    with pytest.raises(PlanningError) as refused:
        plan_application(name="shared", namespace=NAMESPACE, spec=spec, members=[], settings=POLICY)
    assert refused.value.reason == reason
    assert refused.value.message.startswith(f"{at}: ")
    assert validated(shared_application(runtime), monkeypatch) == [(at, "policy")]


def test_every_refused_setting_is_named_when_a_task_tries_several() -> None:
    runtime = {
        "sparkConf": {
            "spark.executorEnv.A": "1",
            "spark.sql.shuffle.partitions": "4",
            "spark.kubernetes.x": "y",
        }
    }
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec_of(runtime), settings=POLICY)
    assert "spark.executorEnv.A" in refused.value.message and "spark.kubernetes.x" in refused.value.message
    assert "spark.sql.shuffle.partitions" not in refused.value.message


ALLOWED = [
    pytest.param({"image": "ghcr.io/federator/federator-spark:0.2.0"}, OperatorSettings(), id="another-tag"),
    pytest.param(
        {"image": "ghcr.io/federator/federator-spark@sha256:" + "a" * 64}, OperatorSettings(), id="digest"
    ),
    pytest.param(
        {"image": "registry.team-a.example/spark/federator:1"},
        OperatorSettings(allowed_images="registry.team-a.example/spark/*"),
        id="installer-listed-registry",
    ),
    pytest.param({"serviceAccountName": "team-a-replicator"}, POLICY, id="installer-listed-account"),
    pytest.param(
        {"serviceAccountName": "orders-replicator"}, OperatorSettings(), id="any-account-by-default"
    ),
    pytest.param(
        {"sparkConf": {"spark.sql.shuffle.partitions": "4", "spark.executor.memoryOverhead": "512m"}},
        POLICY,
        id="tuning",
    ),
    pytest.param(
        {"sparkConf": {"spark.kubernetes.executor.request.cores": "500m"}},
        OperatorSettings(allowed_spark_conf="spark.kubernetes.executor.request.cores"),
        id="installer-listed-key",
    ),
    pytest.param(  # docs/sharing.md: how a shared driver bounds and paces its members
        {
            "sparkConf": {
                "spark.federator.member.maxEventsPerTrigger": "5000",
                "spark.federator.member.triggerIntervalMs": "0",
            }
        },
        POLICY,
        id="member-bound-and-pace",
    ),
]


@pytest.mark.parametrize(("runtime", "settings"), ALLOWED)
def test_what_a_team_legitimately_sets_still_runs(
    runtime: dict[str, Any], settings: OperatorSettings
) -> None:
    plan = plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec_of(runtime), settings=settings)
    assert plan.spark_app.name == "orders"
