"""Planned and forced switches of a FailoverGroup, and the `LosslessFailover` condition: what the
ReplicationTasks copying from the producers' member to the others have left (their `status.lag`) decides
whether a planned switch may go, is waited for up to a timeout, and is recorded as the loss of a forced
one. Rounds are driven with explicit times; no I/O."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from test_failover_state import T0, UP, spec

from federator.failover.conditions import assess
from federator.failover.replication import replication_to_members
from federator.failover.state import GroupState, step
from federator.status.results import written
from federator_contract.api.failovergroup import FailoverGroupStatus


def task(name: str, source: str, target: str, lag: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {
            "source": {"eventHub": {"connection": {"secretRef": {"name": source}}, "eventHubName": "orders"}},
            "targets": [
                {
                    "name": "copy",
                    "eventHub": {"connection": {"secretRef": {"name": target}}, "eventHubName": "orders"},
                }
            ],
        },
    }
    if lag is not None:
        body["status"] = {"lag": lag}
    return body


class Group:
    def __init__(self, **overrides: Any) -> None:
        self.spec = spec(mode="manual", **overrides)
        self.state, self.now, self.notes = GroupState(), T0, []
        self.round([])

    def round(self, tasks: list[dict[str, Any]], after: float = 10) -> None:
        self.now += timedelta(seconds=after)
        replication = replication_to_members(self.spec, self.state.producer, tasks)
        result = step(
            self.spec, self.state, {m.name: UP for m in self.spec.members}, None, self.now, replication
        )
        stored = FailoverGroupStatus.model_validate(written(result.state.to_status()))
        self.state = GroupState.from_status(stored)
        self.notes += [(n.reason, n.message) for n in result.notes]
        self.conditions = {
            c.type: c
            for c in assess(
                self.spec, self.state, replication_to_members(self.spec, self.state.producer, tasks)
            ).updates
        }

    def request(self, member: str) -> None:
        self.spec = self.spec.model_copy(update={"active_member": member})


BEHIND = {"eventsBehind": 120, "rpoSeconds": 4.5}
CAUGHT_UP = {"eventsBehind": 0, "rpoSeconds": 0.0}


def test_only_tasks_from_the_producers_member_to_another_member_count() -> None:
    tasks = [
        task("weu-to-neu", "w", "n", BEHIND),
        task("weu-to-eus", "w", "e", CAUGHT_UP),
        task("neu-to-weu", "n", "w", BEHIND),  # the reverse direction: for a failback, later
        task("elsewhere", "w", "archive", BEHIND),
    ]
    found = replication_to_members(spec(), "weu", tasks)
    assert {m: (r.tasks, r.events_behind, r.rpo_seconds) for m, r in found.items()} == {
        "neu": (("weu-to-neu",), 120, 4.5),
        "eus": (("weu-to-eus",), 0, 0.0),
    }


def test_a_lag_that_cannot_be_read_counts_as_not_measured() -> None:
    found = replication_to_members(spec(), "weu", [task("weu-to-neu", "w", "n", {"eventsBehind": -1})])
    assert (found["neu"].events_behind, found["neu"].caught_up) == (None, False)


def test_the_condition_says_whether_a_failover_now_loses_anything() -> None:
    group = Group()
    group.round([task("weu-to-neu", "w", "n", None)])
    assert (group.conditions["LosslessFailover"].status, group.conditions["LosslessFailover"].reason) == (
        "Unknown",
        "LagNotMeasured",
    )
    group.round([task("weu-to-neu", "w", "n", BEHIND)])
    lossless = group.conditions["LosslessFailover"]
    assert (lossless.status, lossless.reason) == ("False", "ReplicationBehind")
    assert "to neu: 120 events, 4.5 s (tasks weu-to-neu)" in lossless.message
    group.round([task("weu-to-neu", "w", "n", CAUGHT_UP)])
    assert group.conditions["LosslessFailover"].status == "True"
    group.round([])
    assert group.conditions["LosslessFailover"].reason == "NoReplication"


def test_a_planned_switch_waits_for_the_replication_to_catch_up() -> None:
    group = Group(switching={"planned": True, "plannedTimeoutSeconds": 300})
    group.request("neu")
    group.round([task("weu-to-neu", "w", "n", BEHIND)])
    assert group.state.producer == "weu" and group.state.pending_switch == "neu"
    assert group.notes[-1][0] == "PlannedSwitchWaiting"
    group.round([task("weu-to-neu", "w", "n", {"eventsBehind": 3, "rpoSeconds": 0.2})])
    assert group.state.producer == "weu"
    group.round([task("weu-to-neu", "w", "n", CAUGHT_UP)])
    assert (group.state.producer, group.state.consumer, group.state.pending_switch) == ("neu", "neu", None)
    assert group.notes[-1][0] == "Switched"
    assert "planned: the replication to it had caught up" in group.notes[-1][1]
    assert group.state.last_loss is None


def test_a_planned_switch_to_a_member_nothing_replicates_into_says_so() -> None:
    group = Group(switching={"planned": True, "plannedTimeoutSeconds": 300})
    group.request("neu")
    group.round([])
    assert (group.state.producer, group.state.consumer) == ("neu", "neu")
    assert group.notes[-1][0] == "Switched"
    assert "planned: nothing replicates into it" in group.notes[-1][1]
    assert "caught up" not in group.notes[-1][1]


def test_a_planned_switch_goes_after_its_timeout_and_records_what_it_left() -> None:
    group = Group(switching={"planned": True, "plannedTimeoutSeconds": 60})
    group.request("neu")
    group.round([task("weu-to-neu", "w", "n", BEHIND)])
    group.round([task("weu-to-neu", "w", "n", BEHIND)], after=30)
    assert group.state.producer == "weu"
    group.round([task("weu-to-neu", "w", "n", BEHIND)], after=30)
    assert group.state.producer == "neu"
    assert [reason for reason, _ in group.notes[-2:]] == ["PlannedSwitchTimedOut", "SwitchLoss"]
    assert written(group.state.to_status())["lastSwitchLoss"] == {
        "member": "neu",
        "time": "2026-11-01T12:01:20Z",
        "tasks": ["weu-to-neu"],
        "eventsBehind": 120,
        "rpoSeconds": 4.5,
    }


def test_a_forced_switch_goes_at_once_and_records_the_estimated_loss() -> None:
    group = Group()
    group.request("neu")
    group.round([task("weu-to-neu", "w", "n", BEHIND)])
    assert group.state.producer == "neu"
    assert [reason for reason, _ in group.notes[-2:]] == ["Switched", "SwitchLoss"]
    assert "120 events, 4.5 s (tasks weu-to-neu) not replicated" in group.notes[-1][1]
    assert group.state.last_loss is not None and group.state.last_loss.events_behind == 120
