"""The `federator.io/reset-positions` annotation of a ReplicationTask reaches the app: the operator copies its
value into the task config (`resetPositions`), and onto the Spark application, which a new value changes
(so the app restarts and resets). A value that is not a token is refused, naming the annotation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator import reasons
from federator.planning.errors import PlanningError
from federator.planning.task import TaskPlan, plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import RESET_POSITIONS_ANNOTATION, TaskConfig

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eh-replication-cluster.yaml"


def plan(annotations: dict[str, str] | None) -> TaskPlan:
    doc: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    spec = ReplicationTaskSpec.model_validate(doc["spec"])
    return plan_replication_task(
        name="orders", namespace="messaging", spec=spec, settings=OperatorSettings(), annotations=annotations
    )


def test_the_annotation_is_copied_into_the_task_config_the_app_reads() -> None:
    task = plan({RESET_POSITIONS_ANNOTATION: "2026-11-29 re-pointed", "team": "a"})
    config = TaskConfig.from_json(task.config_map["data"]["task.json"])
    assert config.reset_positions == "2026-11-29 re-pointed"
    assert task.spark_app.annotations[RESET_POSITIONS_ANNOTATION] == "2026-11-29 re-pointed"


def test_without_the_annotation_the_task_config_has_no_token() -> None:
    for given in (None, {"team": "a"}):
        task = plan(given)
        assert "resetPositions" not in json.loads(task.config_map["data"]["task.json"])
        assert RESET_POSITIONS_ANNOTATION not in task.spark_app.annotations


def test_a_new_token_changes_the_spark_application_and_the_config() -> None:
    first, second = plan({RESET_POSITIONS_ANNOTATION: "1"}), plan({RESET_POSITIONS_ANNOTATION: "2"})
    assert first.spark_app.annotations != second.spark_app.annotations
    assert first.config_map["data"] != second.config_map["data"]


@pytest.mark.parametrize("value", ["", " padded", "x" * 129, "line\nbreak"])
def test_a_value_that_is_not_a_token_is_refused_naming_the_annotation(value: str) -> None:
    with pytest.raises(PlanningError) as refused:
        plan({RESET_POSITIONS_ANNOTATION: value})
    assert refused.value.reason == reasons.INVALID_SPEC
    assert f"metadata.annotations[{RESET_POSITIONS_ANNOTATION}]" in refused.value.message
