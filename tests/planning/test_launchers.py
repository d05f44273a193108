"""Rendered Spark applications validate against the real CRDs of both Spark operators and carry only
references to Secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation.secrets import secret_shape
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.sparkconf import JAVA_OPTIONS
from support.spark_crds import crd_errors, validator
from support.spark_pods import main_container

ROOT = Path(__file__).resolve().parents[2]


def _rendered(
    launcher: str, example: str = "eh-replication-cluster.yaml", spark_conf: dict[str, str] | None = None
) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "examples" / example).read_text(encoding="utf-8"))
    if spark_conf is not None:
        doc["spec"].setdefault("runtime", {})["sparkConf"] = spark_conf
    spec = ReplicationTaskSpec.model_validate(doc["spec"])
    plan = plan_replication_task(
        name=doc["metadata"]["name"],
        namespace=doc["metadata"]["namespace"],
        spec=spec,
        settings=OperatorSettings(),
        uid="3f1e0c9a-0000-4000-8000-000000000001",
    )
    return render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_rendered_application_validates_against_the_operator_crd(launcher: str) -> None:
    app = _rendered(launcher)
    assert crd_errors(launcher, app) == []


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_validator_would_catch_a_malformed_application(launcher: str) -> None:
    app = _rendered(launcher)
    app["spec"]["unknownField"] = True
    assert list(validator(launcher).iter_errors(app)), "the CRD schema check must be able to fail"


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _env_entries(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found = list(value["env"]) if isinstance(value.get("env"), list) else []
        return found + [e for v in value.values() for e in _env_entries(v)]
    if isinstance(value, list):
        return [e for v in value for e in _env_entries(v)]
    return []


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_secrets_are_referenced_never_inlined(launcher: str) -> None:
    app = _rendered(launcher)
    assert not [s for s in _strings(app) if secret_shape(s)]
    secret_env = [e for e in _env_entries(app) if e["name"].startswith("FEDERATOR_SECRET_")]
    assert secret_env, "the source Secret must reach the pods"
    for entry in secret_env:
        assert "value" not in entry
        assert entry["valueFrom"]["secretKeyRef"] == {"name": "orders-weu", "key": "connectionString"}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_apps_jvms_run_with_the_apps_java_options_unless_the_task_says_otherwise(launcher: str) -> None:
    conf = _rendered(launcher)["spec"]["sparkConf"]
    driver, executor = conf["spark.driver.defaultJavaOptions"], conf["spark.executor.defaultJavaOptions"]
    assert driver == executor == JAVA_OPTIONS

    own = {"spark.driver.defaultJavaOptions": "-XX:+UseZGC", "spark.executor.extraJavaOptions": "-Dx=1"}
    conf = _rendered(launcher, spark_conf=own)["spec"]["sparkConf"]
    assert conf["spark.driver.defaultJavaOptions"] == "-XX:+UseZGC"
    assert (conf["spark.executor.defaultJavaOptions"], conf["spark.executor.extraJavaOptions"]) == (
        JAVA_OPTIONS,
        "-Dx=1",
    )


def test_kubeflow_application_restarts_the_stream_and_sizes_pods_from_the_spec() -> None:
    spec = _rendered("kubeflow")["spec"]
    assert spec["restartPolicy"]["type"] == "Always"
    assert (spec["driver"]["cores"], spec["driver"]["memory"]) == (1, "2g")
    assert (spec["executor"]["instances"], spec["executor"]["cores"], spec["executor"]["memory"]) == (
        2,
        2,
        "4g",
    )
    assert spec["mainApplicationFile"] == "local:///opt/federator/replicate.py"
    mounts = {m["name"]: m for m in main_container(spec["driver"]["template"])["volumeMounts"]}
    assert mounts["federator-checkpoint"]["subPath"] == "messaging/orders-geo-replication"


def test_apache_application_restarts_the_stream_and_sizes_pods_from_the_spec() -> None:
    spec = _rendered("apache")["spec"]
    assert spec["applicationTolerations"]["restartConfig"]["restartPolicy"] == "Always"
    conf = spec["sparkConf"]
    assert (conf["spark.driver.memory"], conf["spark.executor.instances"], conf["spark.executor.memory"]) == (
        "2g",
        "2",
        "4g",
    )
    assert spec["runtimeVersions"]["sparkVersion"] == "4.3.0"
    driver = spec["driverSpec"]["podTemplateSpec"]
    assert driver["metadata"]["annotations"]["prometheus.io/port"] == "9464"
