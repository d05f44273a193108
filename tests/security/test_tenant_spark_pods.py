"""What a task's Spark pods (its own, or a shared application's) give another tenant to work with.
Anything that reaches a driver's RPC port must prove it holds the namespace's RPC secret (else it could
register as an executor and run code with the driver's ServiceAccount and Azure credentials), the traffic
is encrypted, and the secret reaches the pods as a mounted Secret: never in the SparkApplication or a pod
spec, where whoever may read them would find it. Executors carry no API token: code that escapes a task
there has no Kubernetes identity to use. No task can switch any of this off, even where the installer's
pod policy lets it set Spark settings."""

from __future__ import annotations

from typing import Any

import pytest
from tenant_manifests import NAMESPACE, replication_task

from federator.planning.application import plan_application, plan_member_task
from federator.planning.launchers import LAUNCHERS, render_spark_application, rpc
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation.secrets import secret_shape
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.spark_pods import main_container, pod_templates

Obj = dict[str, Any]
RPC_SETTINGS = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.authEngineVersion": "2",
    "spark.network.crypto.cipher": "AES/GCM/NoPadding",
    "spark.network.crypto.saslFallback": "false",
    **{f"spark.authenticate.secret.{which}file": rpc.SECRET_FILE for which in ("", "driver.", "executor.")},
}
# A tenant's attempt to talk the pods out of it, under an installer who allows every Spark setting.
# (`spark.network.crypto.saslFallback` never gets this far: the contract takes its "sas" for a credential.)
SWITCHED_OFF = {
    "spark.authenticate": "false",
    "spark.network.crypto.enabled": "false",
    "spark.network.crypto.authEngineVersion": "1",
    "spark.network.crypto.cipher": "AES/CTR/NoPadding",
}
PERMISSIVE = OperatorSettings(allowed_spark_conf="spark.*")


def _app(
    launcher: str,
    spark_conf: dict[str, str] | None = None,
    settings: OperatorSettings | None = None,
    shared: bool = False,
) -> Obj:
    """A task's own Spark application, or (``shared``) a ReplicationApplication's with the task as member."""
    settings = settings or OperatorSettings()
    if shared:
        member = replication_task(runtime={"applicationRef": {"name": "shared"}})
        config = plan_member_task(
            name="orders",
            namespace=NAMESPACE,
            spec=ReplicationTaskSpec.model_validate(member["spec"]),
            settings=settings,
        ).task_config
        spec = ReplicationApplicationSpec.model_validate({"sparkConf": spark_conf} if spark_conf else {})
        shared_plan = plan_application(
            name="shared", namespace=NAMESPACE, spec=spec, members=[config], settings=settings, uid="u-2"
        )
        return render_spark_application(launcher, shared_plan.spark_app)  # type: ignore[arg-type]
    runtime = {"sparkConf": spark_conf} if spark_conf else {}
    task = ReplicationTaskSpec.model_validate(replication_task(runtime=runtime)["spec"])
    plan = plan_replication_task(name="orders", namespace=NAMESPACE, spec=task, settings=settings, uid="u-1")
    return render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]


# Every test holds for a task's own Spark application and for a shared application's (#41).
SHAPES = [(launcher, shared) for launcher in sorted(LAUNCHERS) for shared in (False, True)]
SHAPE_IDS = [f"{launcher}-{'shared' if shared else 'own'}" for launcher, shared in SHAPES]


def _spark_conf(app: Obj) -> dict[str, str]:
    conf: dict[str, str] = app["spec"]["sparkConf"]
    return conf


def _walk(value: Any) -> list[tuple[str, Any]]:
    """Every (key, value) pair anywhere in ``value``."""
    if isinstance(value, dict):
        return [(k, v) for k, v in value.items()] + [p for v in value.values() for p in _walk(v)]
    if isinstance(value, list):
        return [p for v in value for p in _walk(v)]
    return []


@pytest.mark.parametrize(("launcher", "shared"), SHAPES, ids=SHAPE_IDS)
def test_every_rpc_connection_is_authenticated_and_encrypted(launcher: str, shared: bool) -> None:
    assert _spark_conf(_app(launcher, shared=shared)).items() >= RPC_SETTINGS.items()


@pytest.mark.parametrize(("launcher", "shared"), SHAPES, ids=SHAPE_IDS)
def test_a_tenant_cannot_switch_it_off_even_where_the_policy_allows_any_spark_setting(
    launcher: str, shared: bool
) -> None:
    conf = _spark_conf(_app(launcher, SWITCHED_OFF, PERMISSIVE, shared))
    assert conf.items() >= RPC_SETTINGS.items()
    # The same settings without the policy are refused before anything renders (test_tenant_pod_policy).


@pytest.mark.parametrize(("launcher", "shared"), SHAPES, ids=SHAPE_IDS)
def test_driver_and_executors_read_the_secret_from_the_namespaces_secret(launcher: str, shared: bool) -> None:
    for role, template in pod_templates(launcher, _app(launcher, shared=shared)).items():
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        [mount] = [m for m in main_container(template)["volumeMounts"] if m["name"] == rpc.VOLUME]
        secret = volumes[mount["name"]]["secret"]
        assert secret["secretName"] == rpc.SECRET_NAME, role
        [item] = secret["items"]
        assert f"{mount['mountPath']}/{item['path']}" == rpc.SECRET_FILE, role
        assert item["key"] == rpc.SECRET_KEY
        assert mount["readOnly"] is True
        assert secret["defaultMode"] & 0o007 == 0, "other users of the pod must not read the secret"


@pytest.mark.parametrize(("launcher", "shared"), SHAPES, ids=SHAPE_IDS)
def test_the_secret_itself_is_nowhere_in_the_application(launcher: str, shared: bool) -> None:
    app = _app(launcher, shared=shared)
    pairs = _walk(app)
    # Spark puts a generated secret in each executor's environment unless the executor reads a file.
    assert _spark_conf(app)["spark.authenticate.secret.executor.file"] == rpc.SECRET_FILE
    assert "spark.authenticate.secret" not in _spark_conf(app)
    env_names = [v for k, v in pairs if k == "name" and isinstance(v, str) and v.startswith("SPARK_AUTH")]
    assert env_names == []
    assert not [v for _, v in pairs if isinstance(v, str) and secret_shape(v)]
    # The Secret is named by a volume only: nothing reads it into the resource.
    named = [k for k, v in pairs if v == rpc.SECRET_NAME and k != "name"]
    assert named == ["secretName", "secretName"]


@pytest.mark.parametrize(("launcher", "shared"), SHAPES, ids=SHAPE_IDS)
def test_executors_get_no_api_token_and_the_driver_keeps_the_one_it_starts_them_with(
    launcher: str, shared: bool
) -> None:
    templates = pod_templates(launcher, _app(launcher, shared=shared))
    assert templates["executor"]["spec"]["automountServiceAccountToken"] is False
    assert templates["driver"]["spec"]["automountServiceAccountToken"] is True
    # Both still run as the task's account: workload identity signs executors in through it.
    accounts = {role: template["spec"]["serviceAccountName"] for role, template in templates.items()}
    assert accounts["executor"] == accounts["driver"]
