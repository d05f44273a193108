"""`federator render` previews a shared application as the operator would make it: the
ReplicationApplication's Spark application, rendered with its member tasks from any of the files given,
and each member's task ConfigMap (and no Spark application of the member's own)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from federator.cli.main import app
from support.orders import orders_task

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _member(name: str, secret: str) -> dict[str, Any]:
    task = orders_task(name, "messaging")
    task["spec"] = copy.deepcopy(task["spec"])
    task["spec"]["source"]["eventHub"]["connection"]["secretRef"]["name"] = secret
    task["spec"]["runtime"] = {"applicationRef": {"name": "fleet"}}
    return task


APPLICATION = {
    "apiVersion": "federator.io/v1alpha1",
    "kind": "ReplicationApplication",
    "metadata": {"name": "fleet", "namespace": "messaging"},
    "spec": {"launcher": "apache", "executor": {"instances": 3}},
}


def _render(*paths: Path) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["render", *(a for p in paths for a in ("-f", str(p)))])
    assert result.exit_code == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def test_the_application_is_rendered_with_its_members_from_another_file(tmp_path: Path) -> None:
    application, tasks = tmp_path / "application.yaml", tmp_path / "tasks.yaml"
    application.write_text(yaml.safe_dump(APPLICATION), encoding="utf-8")
    tasks.write_text(yaml.safe_dump_all([_member("a", "weu"), _member("b", "neu")]), encoding="utf-8")

    objects = _render(application, tasks)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("SparkApplication", "fleet"),
        ("ConfigMap", "a-task"),
        ("ConfigMap", "b-task"),
    ]
    spark_app, *config_maps = objects
    assert spark_app["apiVersion"] == "spark.apache.org/v1"
    assert spark_app["spec"]["driverArgs"] == [
        "--task-configmaps",
        "federator.io/application=fleet",
        "--metrics-port",
        "9464",
    ]
    assert spark_app["spec"]["sparkConf"]["spark.executor.instances"] == "3"
    driver = spark_app["spec"]["driverSpec"]["podTemplateSpec"]["spec"]["containers"][0]
    assert [e["valueFrom"]["secretKeyRef"]["name"] for e in driver["env"]] == ["neu", "weu"]
    for config_map in config_maps:
        assert config_map["metadata"]["labels"]["federator.io/application"] == "fleet"


def test_an_application_without_its_members_renders_pods_that_read_no_secret(tmp_path: Path) -> None:
    application = tmp_path / "application.yaml"
    application.write_text(yaml.safe_dump(APPLICATION), encoding="utf-8")
    [spark_app] = _render(application)
    driver = spark_app["spec"]["driverSpec"]["podTemplateSpec"]["spec"]["containers"][0]
    assert driver["env"] == []


def test_the_cluster_example_of_a_shared_application_renders() -> None:
    objects = _render(ROOT / "examples" / "shared-application-cluster.yaml")
    kinds = [o["kind"] for o in objects]
    assert kinds.count("SparkApplication") == 1 and kinds.count("ConfigMap") == len(objects) - 1 >= 2
