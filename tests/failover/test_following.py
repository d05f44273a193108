"""A ReplicationTask following a FailoverGroup is planned with the member the group publishes: consumers'
for its source, producers' for its targets; the task config carries what the app needs to resume."""

from __future__ import annotations

import json
from typing import Any

import pytest

from federator.planning.errors import PlanningError
from federator.planning.following import followed_groups, resolve_following
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import FollowingSource

FOLLOW = {"failoverGroupRef": {"name": "orders", "resumeSkewSeconds": 30}}


def task(source: dict[str, Any] | None = None, target: dict[str, Any] | None = None) -> ReplicationTaskSpec:
    return ReplicationTaskSpec.model_validate(
        {
            "source": {"serviceBus": {"connection": source or FOLLOW, "queueName": "orders"}},
            "targets": [
                {
                    "name": "archive",
                    "eventHub": {
                        "connection": target or {"secretRef": {"name": "arch"}},
                        "eventHubName": "a",
                    },
                }
            ],
        }
    )


def group(producer: str | None, consumer: str | None) -> dict[str, Any]:
    status = {"producerMember": producer, "consumerMember": consumer, "consumerSince": "2026-11-01T12:00:00Z"}
    return {
        "metadata": {"name": "orders"},
        "spec": {
            "primaryMember": "weu",
            "members": [
                {"name": "weu", "endpoint": "weu.example", "connection": {"secretRef": {"name": "weu-conn"}}},
                {
                    "name": "neu",
                    "endpoint": "neu.example",
                    "connection": {
                        "workloadIdentity": {"fullyQualifiedNamespace": "neu.servicebus.windows.net"}
                    },
                },
            ],
        },
        "status": {k: v for k, v in status.items() if v is not None},
    }


def test_the_source_reads_the_consumers_member_and_targets_write_to_the_producers() -> None:
    spec = task(target=FOLLOW)
    assert followed_groups(spec) == ["orders"]
    failing_back = group(producer="weu", consumer="neu")
    following = resolve_following(spec, {"orders": failing_back})
    source = following.spec.source.service_bus
    assert source is not None and source.connection.workload_identity is not None
    assert source.connection.failover_group_ref is None
    target = following.spec.targets[0].event_hub
    assert target is not None and target.connection.secret_ref is not None
    assert target.connection.secret_ref.name == "weu-conn"
    assert following.source == FollowingSource(
        group="orders", member="neu", switched_at="2026-11-01T12:00:00Z", skew_seconds=30
    )
    assert following.source_member == "neu"
    assert following.members == {
        "spec.source.serviceBus": "orders/neu",
        "spec.targets[0].eventHub": "orders/weu",
    }
    assert following.annotations == {
        "federator.io/following": "spec.source.serviceBus=orders/neu,spec.targets[0].eventHub=orders/weu"
    }


def test_the_plan_carries_the_resume_contract_and_the_members_secret() -> None:
    following = resolve_following(task(), {"orders": group(producer="weu", consumer="weu")})
    plan = plan_replication_task(
        name="archive", namespace="ns", spec=following.spec, settings=OperatorSettings(), following=following
    )
    config = json.loads(plan.config_map["data"]["task.json"])
    assert config["following"]["member"] == "weu" and config["following"]["skewSeconds"] == 30
    assert config["followedMembers"] == {"spec.source.serviceBus": "orders/weu"}
    assert config["spec"]["source"]["serviceBus"]["connection"] == {
        "secretRef": {"name": "weu-conn", "key": "connectionString"}
    }
    assert "weu-conn/connectionString" in config["secretEnv"], "the member's Secret reaches the Spark pods"
    assert plan.spark_app.annotations["federator.io/following"] == "spec.source.serviceBus=orders/weu"


def test_a_task_that_follows_nothing_is_planned_as_before() -> None:
    spec = task(source={"secretRef": {"name": "src"}})
    following = resolve_following(spec, {})
    assert following.spec == spec and following.source is None and following.annotations == {}
    plan = plan_replication_task(
        name="t", namespace="ns", spec=spec, settings=OperatorSettings(), following=following
    )
    assert "following" not in json.loads(plan.config_map["data"]["task.json"])


@pytest.mark.parametrize(
    ("groups", "reason"),
    [
        ({"orders": None}, "FailoverGroupNotFound"),
        ({"orders": group(producer=None, consumer=None)}, "FailoverGroupPending"),
    ],
)
def test_a_group_that_is_missing_or_has_not_chosen_is_reported(groups: dict[str, Any], reason: str) -> None:
    with pytest.raises(PlanningError) as raised:
        resolve_following(task(), groups)
    assert raised.value.reason == reason
    assert "spec.source.serviceBus follows FailoverGroup orders" in raised.value.message


def test_without_the_operator_following_is_refused_with_a_reason() -> None:
    with pytest.raises(PlanningError) as raised:
        plan_replication_task(name="t", namespace="ns", spec=task(), settings=OperatorSettings())
    assert raised.value.reason == "FailoverGroupFollowingNotAvailable"
