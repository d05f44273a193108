"""What a task's passes keep between them: the spec is parsed once per generation, and the children are
planned again only when the spec or a followed group's member changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from federator.planning.following import Following
from federator.reconcile.replicationtask import PassPlan, TaskMemory, parse, plan
from federator.reconcile.replicationtask_inputs import TaskInputs
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import FollowingSource
from support.orders import orders_service_account

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eh-replication-cluster.yaml"
SECRET = {"stringData": {"connectionString": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=eA=="}}


def body(generation: int, hub: str = "orders") -> dict[str, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["metadata"] = {"name": "orders", "namespace": "default", "uid": "u-1", "generation": generation}
    doc["spec"]["source"]["eventHub"]["eventHubName"] = hub
    return dict(doc)


def planned(doc: dict[str, Any], memory: TaskMemory, following: Following | None = None) -> PassPlan:
    spec = parse(doc, memory).spec
    assert spec is not None
    inputs = TaskInputs(
        following or Following(spec),
        {"orders-weu": SECRET},
        launcher_served=True,
        service_account=orders_service_account(),  # the example's target signs in with workload identity
    )
    found = plan(doc["metadata"], inputs, OperatorSettings(), memory)
    assert isinstance(found, PassPlan)
    return found


def test_the_spec_is_parsed_once_per_generation() -> None:
    memory = TaskMemory()
    first = parse(body(1), memory)
    assert parse(body(1), memory) is first
    changed = parse(body(2, hub="invoices"), memory)
    assert changed is not first and changed.spec is not None
    assert (
        changed.spec.source.event_hub is not None
        and changed.spec.source.event_hub.event_hub_name == "invoices"
    )


def test_an_invalid_spec_is_reported_without_a_model() -> None:
    doc = body(1)
    doc["spec"]["targets"][0]["condition"] = "region = = 'eu'"
    parsed = parse(doc, TaskMemory())
    assert parsed.spec is None and "spec.targets[0].condition" in parsed.problems


def test_children_are_planned_again_only_for_a_new_generation_or_member() -> None:
    memory = TaskMemory()
    first = planned(body(1), memory)
    assert planned(body(1), memory).task is first.task
    assert planned(body(2), memory).task is not first.task

    spec = parse(body(2), memory).spec
    assert isinstance(spec, ReplicationTaskSpec)
    switched = Following(
        spec, FollowingSource(group="g", member="b", skew_seconds=30), {"spec.source": "g/b"}
    )
    again = planned(body(2), memory, switched)
    assert again.task.task_config.followed_members == {"spec.source": "g/b"}
