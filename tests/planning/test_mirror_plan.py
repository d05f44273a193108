"""ServiceBusMirror planning: the federation patterns' subscriptions, rules and generated tasks."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from federator.planning.mirror import MirrorPlan, plan_mirror
from federator.validation import validate_object
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.sql import SqlMessage, parse_action, parse_filter


def _spec(pattern: str, members: list[str], **extra: Any) -> ServiceBusMirrorSpec:
    raw: dict[str, Any] = {
        "pattern": pattern,
        "members": [
            {"name": m, "connection": {"secretRef": {"name": f"{m}-conn"}}, "management": {"dataPlane": {}}}
            for m in members
        ],
        **extra,
    }
    return ServiceBusMirrorSpec.model_validate(raw)


def _plan(spec: ServiceBusMirrorSpec) -> MirrorPlan:
    return plan_mirror(name="orders", namespace="shop", spec=spec, uid="uid-1")


def test_all_active_has_one_replication_subscription_per_peer_on_every_topic() -> None:
    plan = _plan(_spec("allActive", ["a", "b", "c"], topicName="orders"))
    assert sorted((s.member, s.name) for s in plan.subscriptions) == [
        ("a", "repl-b"),
        ("a", "repl-c"),
        ("b", "repl-a"),
        ("b", "repl-c"),
        ("c", "repl-a"),
        ("c", "repl-b"),
    ]
    for subscription in plan.subscriptions:
        [rule] = subscription.rules
        assert (rule.sql_filter, rule.sql_action) == ("replication IS NULL", "SET replication = 1")
    assert all(s["removeRules"] == ["$Default"] for s in plan.provisioning()["subscriptions"])
    assert len(plan.tasks) == 6


def test_generated_tasks_copy_each_subscription_into_the_peer_topic() -> None:
    plan = _plan(_spec("allActive", ["a", "b"], topicName="orders"))
    task = next(t for t in plan.tasks if t["metadata"]["name"] == "orders-a-b")
    source = task["spec"]["source"]["serviceBus"]
    assert (source["topicName"], source["subscriptionName"], source["connection"]) == (
        "orders",
        "repl-b",
        {"secretRef": {"name": "a-conn", "key": "connectionString"}},
    )
    target = task["spec"]["targets"][0]["serviceBus"]
    assert (target["topicName"], target["connection"]["secretRef"]["name"]) == ("orders", "b-conn")
    assert task["metadata"]["ownerReferences"][0]["kind"] == "ServiceBusMirror"


@pytest.mark.parametrize(
    "spec",
    [
        _spec("allActive", ["west", "east", "north"], topicName="orders"),
        _spec(
            "activePassive",
            ["p", "s1", "s2"],
            topicName="invoices",
            activePassive={"primaryMember": "p", "timeToLiveSeconds": 120},
        ),
        _spec(
            "spillover",
            ["left", "right"],
            spillover={"entities": [{"queueName": "q"}, {"topicName": "t", "subscriptionName": "s"}]},
        ),
    ],
    ids=["allActive", "activePassive", "spillover"],
)
def test_generated_tasks_are_valid_replication_tasks(spec: ServiceBusMirrorSpec) -> None:
    plan = _plan(spec)
    assert plan.tasks
    for task in plan.tasks:
        kind, problems = validate_object(task)
        assert kind is not None and problems == [], (task["metadata"]["name"], [str(p) for p in problems])
    names = [t["metadata"]["name"] for t in plan.tasks]
    assert len(set(names)) == len(names)


def test_active_passive_replicates_only_from_the_primary_with_the_failover_window_as_ttl() -> None:
    plan = _plan(
        _spec(
            "activePassive",
            ["p", "s"],
            topicName="invoices",
            activePassive={"primaryMember": "p", "timeToLiveSeconds": 120},
        )
    )
    [subscription] = plan.subscriptions
    assert (subscription.member, subscription.name) == ("p", "repl-s")
    assert subscription.rules[0].sql_action == "SET replication = 1; SET sys.TimeToLive = '00:02:00'"
    assert [t["metadata"]["name"] for t in plan.tasks] == ["orders-p-s"]


def test_a_property_name_that_is_not_an_identifier_is_bracketed() -> None:
    plan = _plan(_spec("allActive", ["a", "b"], topicName="t", replicationProperty="repl-done"))
    rule = plan.subscriptions[0].rules[0]
    assert (rule.sql_filter, rule.sql_action) == ("[repl-done] IS NULL", "SET [repl-done] = 1")
    parse_filter(rule.sql_filter)
    parse_action(rule.sql_action or "")


def test_spillover_sends_dead_letters_to_the_peer_once_then_to_the_auxiliary_queue() -> None:
    plan = _plan(_spec("spillover", ["left", "right"], spillover={"entities": [{"queueName": "jobs"}]}))
    assert sorted((q.member, q.name) for q in plan.queues) == [
        ("left", "spillover-aux"),
        ("right", "spillover-aux"),
    ]
    task = next(t for t in plan.tasks if t["metadata"]["name"] == "orders-left-right")
    spec = task["spec"]
    assert spec["source"]["serviceBus"] == {
        "connection": {"secretRef": {"name": "left-conn", "key": "connectionString"}},
        "queueName": "jobs",
        "subQueue": "deadLetter",
    }
    [peer] = spec["targets"]
    assert peer["condition"] == "[repl-spilled] IS NULL"
    assert peer["setProperties"] == {"repl-spilled": "1"}
    assert peer["serviceBus"]["connection"]["secretRef"]["name"] == "right-conn"
    assert spec["unrouted"]["serviceBus"] == {
        "connection": {"secretRef": {"name": "left-conn", "key": "connectionString"}},
        "queueName": "spillover-aux",
    }


def test_long_generated_names_are_bounded_and_distinct() -> None:
    spec = _spec(
        "spillover",
        ["leftleftleft", "rightrightri"],
        spillover={"entities": [{"queueName": f"q{i}"} for i in range(3)]},
    )
    plan = plan_mirror(name="x" * 24, namespace="shop", spec=spec)
    names = [t["metadata"]["name"] for t in plan.tasks]
    assert all(len(n) <= 50 for n in names) and len(set(names)) == len(names) == 6
    assert names == [
        t["metadata"]["name"] for t in plan_mirror(name="x" * 24, namespace="shop", spec=spec).tasks
    ]


def _deliver(plan: MirrorPlan, topic_member: str, message: SqlMessage) -> list[tuple[str, SqlMessage]]:
    """Fan a message out to the member's replication subscriptions: (peer, copy as delivered)."""
    out = []
    for subscription in (s for s in plan.subscriptions if s.member == topic_member):
        [rule] = subscription.rules
        if parse_filter(rule.sql_filter).matches(message):
            copy = SqlMessage(system=dict(message.system), user=dict(message.user))
            parse_action(rule.sql_action or "").apply(copy)
            out.append((subscription.name.removeprefix("repl-"), copy))
    return out


@pytest.mark.parametrize("origin", ["a", "b", "c"])
def test_all_active_rules_deliver_every_message_once_to_every_topic_and_never_back(origin: str) -> None:
    plan = _plan(_spec("allActive", ["a", "b", "c"], topicName="orders"))
    arrivals: Counter[str] = Counter({origin: 1})
    pending = [(origin, SqlMessage(system={"MessageId": "m1"}, user={"kind": "order"}))]
    while pending:
        member, message = pending.pop()
        for peer, copy in _deliver(plan, member, message):
            arrivals[peer] += 1  # the generated task sends the subscription's copy into the peer's topic
            pending.append((peer, copy))
        assert sum(arrivals.values()) < 10, "messages are bouncing"
    assert arrivals == Counter({"a": 1, "b": 1, "c": 1})
