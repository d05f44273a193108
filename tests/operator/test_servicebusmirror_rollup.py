"""How a mirror's members and pairs roll up into its conditions (pure): Ready only when every member is
provisioned and every pair's task is Ready, and never without naming what is wrong."""

from __future__ import annotations

from typing import Any

from federator.planning.mirror import Pair, plan_mirror
from federator.provision.members import MemberOutcome
from federator.reconcile.servicebusmirror import rollup
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec


def spec(pattern: str, members: list[str], **extra: Any) -> ServiceBusMirrorSpec:
    raw = {
        "pattern": pattern,
        "members": [
            {"name": m, "connection": {"secretRef": {"name": f"{m}-conn"}}, "management": {"dataPlane": {}}}
            for m in members
        ],
        **extra,
    }
    return ServiceBusMirrorSpec.model_validate(raw)


def task(
    name: str, ready: str | None, reason: str = "", stalled: bool = False, message: str = ""
) -> dict[str, Any]:
    conditions = []
    if ready is not None:
        conditions = [
            {"type": "Ready", "status": ready, "reason": reason, "message": message},
            {
                "type": "Stalled",
                "status": "True" if stalled else "False",
                "reason": reason,
                "message": message,
            },
        ]
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


PAIRS = [Pair("a", "b", {"metadata": {"name": "m-a-b"}}), Pair("b", "a", {"metadata": {"name": "m-b-a"}})]
OK = [MemberOutcome("a", "Provisioned", "Provisioned"), MemberOutcome("b", "Provisioned", "Provisioned")]


def by_type(found: Any) -> dict[str, Any]:
    return {u.type: u for u in found.condition_updates}


def test_ready_only_when_every_member_is_provisioned_and_every_task_is_ready() -> None:
    tasks = {"m-a-b": task("m-a-b", "True", "Running"), "m-b-a": task("m-b-a", "True", "Running")}
    found = rollup(OK, PAIRS, tasks)
    conditions = by_type(found)
    assert (conditions["Ready"].status, conditions["Ready"].reason) == ("True", "Mirroring")
    assert conditions["RulesProvisioned"].status == conditions["TasksReady"].status == "True"
    assert found.status_fields["pairs"][0] == {
        "source": "a",
        "target": "b",
        "taskName": "m-a-b",
        "ready": "True",
        "reason": "Running",
    }
    assert found.retry_after is None


def test_one_failed_pair_is_named_and_stalls_the_mirror() -> None:
    tasks = {
        "m-a-b": task("m-a-b", "True", "Running"),
        "m-b-a": task("m-b-a", "False", "SparkApplicationFailed", stalled=True, message="driver OOMKilled"),
    }
    conditions = by_type(rollup(OK, PAIRS, tasks))
    ready = conditions["Ready"]
    assert (ready.status, ready.reason) == ("False", "PairFailed")
    assert "b → a (ReplicationTask m-b-a): SparkApplicationFailed: driver OOMKilled" in ready.message
    assert conditions["Stalled"].status == "True" and conditions["TasksReady"].reason == "PairFailed"


def test_tasks_on_their_way_keep_the_mirror_reconciling() -> None:
    tasks = {"m-a-b": task("m-a-b", "False", "SparkApplicationPending"), "m-b-a": None}
    conditions = by_type(rollup(OK, PAIRS, tasks))
    assert (conditions["Ready"].reason, conditions["Reconciling"].status) == ("PairsPending", "True")
    assert "a → b (ReplicationTask m-a-b): SparkApplicationPending" in conditions["Ready"].message
    assert "b → a (ReplicationTask m-b-a): not created yet" in conditions["Ready"].message


def test_a_member_that_needs_a_human_stalls_even_when_the_pairs_are_fine() -> None:
    failing = [OK[0], MemberOutcome("b", "Failed", "EntityNotFound", "member b: topic orders does not exist")]
    tasks = {"m-a-b": task("m-a-b", "True", "Running"), "m-b-a": task("m-b-a", "True", "Running")}
    found = rollup(failing, PAIRS, tasks)
    conditions = by_type(found)
    assert (conditions["Ready"].reason, conditions["Stalled"].status) == ("EntityNotFound", "True")
    assert "member b" in conditions["Ready"].message
    assert (conditions["RulesProvisioned"].status, conditions["RulesProvisioned"].reason) == (
        "False",
        "EntityNotFound",
    )
    assert found.status_fields["members"][1]["state"] == "Failed"
    assert found.retry_after is not None, "a failed member is tried again"


def test_a_transient_member_failure_is_reconciling() -> None:
    flaky = [
        OK[0],
        MemberOutcome("b", "Failed", "ManagementUnavailable", "member b: HTTP 503", transient=True),
    ]
    conditions = by_type(rollup(flaky, PAIRS, {}))
    assert (conditions["Ready"].reason, conditions["Reconciling"].status, conditions["Stalled"].status) == (
        "ManagementUnavailable",
        "True",
        "False",
    )


def test_pairs_name_their_members_for_every_pattern() -> None:
    all_active = spec("allActive", ["a", "b", "c"], topicName="t")
    plan = plan_mirror(name="m", namespace="ns", spec=all_active)
    assert sorted((p.source, p.target) for p in plan.pairs) == [
        ("a", "b"),
        ("a", "c"),
        ("b", "a"),
        ("b", "c"),
        ("c", "a"),
        ("c", "b"),
    ]
    active_passive = spec(
        "activePassive",
        ["p", "s"],
        topicName="t",
        activePassive={"primaryMember": "p", "timeToLiveSeconds": 60},
    )
    plan = plan_mirror(name="m", namespace="ns", spec=active_passive)
    assert [(p.source, p.target, p.task_name) for p in plan.pairs] == [("p", "s", "m-p-s")]
    spill = spec("spillover", ["l", "r"], spillover={"entities": [{"queueName": "q1"}, {"queueName": "q2"}]})
    plan = plan_mirror(name="m", namespace="ns", spec=spill)
    assert [(p.source, p.target, p.task_name) for p in plan.pairs] == [
        ("l", "r", "m-l-r-0"),
        ("r", "l", "m-r-l-0"),
        ("l", "r", "m-l-r-1"),
        ("r", "l", "m-r-l-1"),
    ]
