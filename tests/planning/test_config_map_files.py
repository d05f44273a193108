"""ConfigMap keys that editors read reach the Spark pods as read-only files, named in the task config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.task import TaskPlan, plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.spark_crds import crd_errors
from support.spark_pods import main_container, pod_templates

ROOT = Path(__file__).resolve().parents[2]
EDITORS = [
    {"validate": {"schemaConfigMapRef": {"name": "schemas", "key": "order.json"}}},
    {
        "enrich": {
            "lookup": {
                "configMapRef": {"name": "merchant-regions", "key": "regions.json"},
                "keyFrom": "body.merchant",
                "into": "region",
            }
        }
    },
    {
        "transcode": {
            "input": "json",
            "output": "avro",
            "avroSchema": {"configMapRef": {"name": "schemas", "key": "order.avsc"}},
        }
    },
    {"validate": {"schemaConfigMapRef": {"name": "schemas", "key": "order.json"}}},  # the same key twice
    {"transcode": {"input": "avro", "output": "json", "avroSchema": {"inline": '"string"'}}},
]


def _plan(editors: list[dict[str, Any]]) -> TaskPlan:
    doc = yaml.safe_load((ROOT / "examples" / "eh-replication-cluster.yaml").read_text(encoding="utf-8"))
    spec = ReplicationTaskSpec.model_validate(
        {**doc["spec"], "editors": editors, "deadLetter": {"eventHub": doc["spec"]["targets"][0]["eventHub"]}}
    )
    return plan_replication_task(name="orders", namespace="messaging", spec=spec, settings=OperatorSettings())


def test_the_task_config_names_a_file_for_each_config_map_key_once() -> None:
    config = json.loads(_plan(EDITORS).config_map["data"]["task.json"])
    assert config["configMapFiles"] == {
        "merchant-regions/regions.json": "/etc/federator/config-maps/merchant-regions/regions.json",
        "schemas/order.avsc": "/etc/federator/config-maps/schemas/order.avsc",
        "schemas/order.json": "/etc/federator/config-maps/schemas/order.json",
    }


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_without_config_map_references_nothing_is_mounted(launcher: str) -> None:
    plan = _plan([{"filter": {"condition": "a = 1"}}])
    assert json.loads(plan.config_map["data"]["task.json"])["configMapFiles"] == {}
    app = render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]
    for template in pod_templates(launcher, app).values():
        assert not [v for v in template["spec"]["volumes"] if v["name"].startswith("federator-config-map")]


def _pods(launcher: str, app: dict[str, Any]) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """The volumes and the driver's and executors' volume mounts of a rendered application."""
    templates = pod_templates(launcher, app)
    assert templates["driver"]["spec"]["volumes"] == templates["executor"]["spec"]["volumes"]
    mounts = [main_container(t)["volumeMounts"] for t in templates.values()]
    return templates["driver"]["spec"]["volumes"], mounts


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_each_config_map_is_one_read_only_volume_mounted_where_the_task_config_says(launcher: str) -> None:
    plan = _plan(EDITORS)
    app = render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]
    assert crd_errors(launcher, app) == []
    volumes, mounts_per_pod = _pods(launcher, app)
    config_maps = {
        v["configMap"]["name"]: v for v in volumes if "configMap" in v and v["name"] != "federator-task"
    }
    assert {name: v["configMap"]["items"] for name, v in config_maps.items()} == {
        "merchant-regions": [{"key": "regions.json", "path": "regions.json"}],
        "schemas": [{"key": "order.avsc", "path": "order.avsc"}, {"key": "order.json", "path": "order.json"}],
    }
    files = json.loads(plan.config_map["data"]["task.json"])["configMapFiles"]
    for mounts in mounts_per_pod:
        by_volume = {m["name"]: m for m in mounts}
        for ref, path in files.items():
            name, key = ref.split("/")
            mount = by_volume[config_maps[name]["name"]]
            assert mount["readOnly"] is True
            assert f"{mount['mountPath']}/{key}" == path
