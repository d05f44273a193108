"""The provisioning diff: what a member must get so that it has exactly what the mirror plans, touching
only what the mirror owns."""

from __future__ import annotations

from federator.planning.mirror import QueuePlan, RulePlan, SubscriptionPlan
from federator.provision.diff import diff, targets
from federator.provision.model import (
    CreateQueue,
    CreateSubscription,
    DeleteQueue,
    DeleteRule,
    DeleteSubscription,
    Desired,
    Observed,
    ObservedQueue,
    ObservedSubscription,
    PutRule,
)

MARK = "federator.io/servicebusmirror=shop/orders"
RULE = RulePlan("replication", "replication IS NULL", "SET replication = 1")
TO_B = SubscriptionPlan("a", "orders", "repl-b", (RULE,), MARK)
AUX = QueuePlan("a", "spillover-aux", MARK)


def ours(name: str = "repl-b", *rules: RulePlan) -> ObservedSubscription:
    return ObservedSubscription(name, MARK, rules or (RULE,))


def test_a_new_subscription_gets_its_rules_before_default_goes() -> None:
    result = diff(Desired(MARK, (TO_B,)), Observed(topics={"orders": (ObservedSubscription("app", None),)}))
    assert result.operations == [
        CreateSubscription("orders", "repl-b", MARK),
        PutRule("orders", "repl-b", RULE, exists=False),
        DeleteRule("orders", "repl-b", "$Default"),
    ]
    assert result.entities == ["topics/orders/subscriptions/repl-b"]
    assert result.drift == [] and result.not_owned == [] and result.missing_topics == []


def test_what_is_already_as_planned_needs_no_write() -> None:
    observed = Observed(topics={"orders": (ours(), ObservedSubscription("app", None))}, queues={})
    result = diff(Desired(MARK, (TO_B,)), observed, ["topics/orders/subscriptions/repl-b"])
    assert result.operations == [] and result.drift == []
    assert result.entities == ["topics/orders/subscriptions/repl-b"]


def test_a_rule_changed_by_hand_is_put_back_and_reported() -> None:
    changed = RulePlan("replication", "1=1", "SET replication = 1")
    result = diff(Desired(MARK, (TO_B,)), Observed(topics={"orders": (ours("repl-b", changed),)}))
    assert result.operations == [PutRule("orders", "repl-b", RULE, exists=True)]
    assert result.drift == ["rule replication of orders/repl-b was changed"]


def test_a_rule_added_by_hand_is_removed_after_the_planned_rule_is_restored() -> None:
    extra = RulePlan("$Default", "1=1")
    result = diff(
        Desired(MARK, (TO_B,)), Observed(topics={"orders": (ObservedSubscription("repl-b", MARK, (extra,)),)})
    )
    assert result.operations == [
        PutRule("orders", "repl-b", RULE, exists=False),
        DeleteRule("orders", "repl-b", "$Default"),
    ]
    assert result.drift == [
        "rule replication of orders/repl-b was deleted",
        "rule $Default was added to orders/repl-b",
    ]


def test_a_deleted_subscription_is_recreated_and_reported_as_drift() -> None:
    result = diff(
        Desired(MARK, (TO_B,)), Observed(topics={"orders": ()}), ["topics/orders/subscriptions/repl-b"]
    )
    assert result.operations[0] == CreateSubscription("orders", "repl-b", MARK)
    assert result.drift == ["subscription repl-b on topic orders was deleted"]


def test_someone_elses_subscription_with_the_planned_name_is_left_alone() -> None:
    theirs = ObservedSubscription("Repl-B", "team-x", (RulePlan("$Default", "1=1"),))
    result = diff(Desired(MARK, (TO_B,)), Observed(topics={"orders": (theirs,)}))
    assert result.operations == []
    assert result.not_owned == ["topics/orders/subscriptions/repl-b"]
    assert result.entities == []


def test_subscriptions_without_the_marker_are_never_deleted_owned_unplanned_ones_are() -> None:
    observed = Observed(
        topics={
            "orders": (
                ours(),
                ours("repl-c"),
                ObservedSubscription("repl-d", None),
                ObservedSubscription("x", "other"),
            )
        }
    )
    result = diff(Desired(MARK, (TO_B,)), observed)
    assert result.operations == [DeleteSubscription("orders", "repl-c")]


def test_nothing_desired_removes_everything_owned_and_nothing_else() -> None:
    observed = Observed(
        topics={"orders": (ours(), ObservedSubscription("app", None))},
        queues={"spillover-aux": ObservedQueue("spillover-aux", MARK), "jobs": ObservedQueue("jobs", None)},
    )
    result = diff(Desired(MARK), observed)
    assert result.operations == [DeleteSubscription("orders", "repl-b"), DeleteQueue("spillover-aux")]
    assert result.entities == []


def test_a_missing_topic_is_reported_not_created() -> None:
    result = diff(Desired(MARK, (TO_B,)), Observed(topics={"orders": None}))
    assert result.operations == [] and result.missing_topics == ["orders"]


def test_the_auxiliary_queue_is_created_or_used_as_found() -> None:
    created = diff(Desired(MARK, queues=(AUX,)), Observed(queues={"spillover-aux": None}))
    assert created.operations == [CreateQueue("spillover-aux", MARK)]
    assert created.entities == ["queues/spillover-aux"]
    theirs = diff(
        Desired(MARK, queues=(AUX,)), Observed(queues={"spillover-aux": ObservedQueue("Spillover-Aux", None)})
    )
    assert theirs.operations == [] and theirs.entities == [] and theirs.not_owned == []


def test_recorded_entities_are_looked_at_even_when_no_longer_planned() -> None:
    recorded = ["topics/old-topic/subscriptions/repl-b", "queues/old-aux", "not/a/path"]
    assert targets(Desired(MARK, (TO_B,), (AUX,)), recorded) == (
        ["orders", "old-topic"],
        ["spillover-aux", "old-aux"],
    )
