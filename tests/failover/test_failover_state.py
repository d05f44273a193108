"""The FailoverGroup state machine as a specification: thresholds, manual switches, failback with drain and
timeout, flapping members. Rounds are driven with explicit times; no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federator.failover.conditions import assess, failback_instruction
from federator.failover.state import Drain, GroupState, ProbeOutcome, Step, step
from federator.status.results import written
from federator_contract.api.failovergroup import DrainHold, FailoverGroupSpec, FailoverGroupStatus

T0 = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
UP, DOWN = ProbeOutcome(True), ProbeOutcome(False, "connection refused")
ORDERS_HELD = DrainHold(entity="orders")  # the drain entity still holds a message


def spec(**overrides: Any) -> FailoverGroupSpec:
    doc: dict[str, Any] = {
        "mode": "automatic",
        "primaryMember": "weu",
        "members": [
            {
                "name": "weu",
                "endpoint": "weu.servicebus.windows.net",
                "connection": {"secretRef": {"name": "w"}},
            },
            {
                "name": "neu",
                "endpoint": "neu.servicebus.windows.net",
                "connection": {"secretRef": {"name": "n"}},
            },
            {
                "name": "eus",
                "endpoint": "eus.servicebus.windows.net",
                "connection": {"secretRef": {"name": "e"}},
            },
        ],
        "probe": {"failureThreshold": 3, "entity": {"queueName": "orders"}},
        "failback": {"drainEntities": [{"queueName": "orders"}], "drainTimeoutSeconds": 60},
    }
    doc.update(overrides)
    return FailoverGroupSpec.model_validate(doc)


class Group:
    """Feeds rounds to the machine the way the controller does: each round's state is the next one's input."""

    def __init__(self, group_spec: FailoverGroupSpec) -> None:
        self.spec = group_spec
        self.state = GroupState()
        self.now = T0
        self.steps: list[Step] = []

    def round(
        self, probes: dict[str, ProbeOutcome] | None = None, drain: Drain | None = None, after: float = 10
    ) -> Step:
        self.now += timedelta(seconds=after)
        result = step(
            self.spec, self.state, probes or {m.name: UP for m in self.spec.members}, drain, self.now
        )
        stored = FailoverGroupStatus.model_validate(written(result.state.to_status()))  # as a patch writes it
        self.state = GroupState.from_status(stored)
        self.steps.append(result)
        return result

    def rounds(self, outcomes: Sequence[ProbeOutcome], member: str = "weu") -> None:
        for outcome in outcomes:
            self.round({m.name: outcome if m.name == member else UP for m in self.spec.members})

    @property
    def where(self) -> tuple[str | None, str | None, str | None]:
        return self.state.phase, self.state.producer, self.state.consumer

    def reasons(self) -> list[str]:
        return [n.reason for s in self.steps for n in s.notes]


def test_a_new_group_starts_on_the_member_the_spec_names() -> None:
    group = Group(spec())
    first = group.round()
    assert group.where == ("Normal", "weu", "weu")
    assert [(s.roles, s.target, s.cause) for s in first.switches] == [("both", "weu", "initial")]
    manual_on_neu = Group(spec(mode="manual", activeMember="neu"))
    manual_on_neu.round()
    assert manual_on_neu.where == ("FailedOver", "neu", "neu")


@pytest.mark.parametrize(
    ("outcomes", "failed_over"),
    [
        ([DOWN, DOWN], False),  # below the threshold
        ([DOWN, DOWN, DOWN], True),  # at the threshold
        ([DOWN, UP, DOWN, UP, DOWN, UP, DOWN], False),  # flapping: failures are never consecutive
        ([DOWN, DOWN, UP, DOWN, DOWN, DOWN], True),  # a success resets the count, then three in a row
    ],
)
def test_automatic_failover_needs_threshold_consecutive_failures(
    outcomes: list[ProbeOutcome], failed_over: bool
) -> None:
    group = Group(spec())
    group.round()
    group.rounds(outcomes)
    assert group.where == (("FailedOver", "neu", "neu") if failed_over else ("Normal", "weu", "weu"))
    assert ("FailedOver" in group.reasons()) is failed_over


def test_a_failover_goes_to_the_first_healthy_member_and_says_why() -> None:
    group = Group(spec())
    group.round()
    for _ in range(3):
        last = group.round({"weu": DOWN, "neu": DOWN, "eus": UP})
    assert group.where == ("FailedOver", "eus", "eus")
    [switch] = last.switches
    assert (switch.roles, switch.source, switch.target, switch.cause) == ("both", "weu", "eus", "failover")
    [event] = [n for n in last.notes if n.reason == "FailedOver"]
    assert event.type == "Warning" and "weu failed 3 probes in a row" in event.message
    assert group.state.health["weu"].consecutive_failures == 3
    assert group.state.health["weu"].message == "connection refused"


def test_with_no_healthy_member_the_group_stays_and_warns_once() -> None:
    group = Group(spec())
    group.round()
    for _ in range(5):
        group.round({"weu": DOWN, "neu": DOWN, "eus": DOWN})
    assert group.where == ("Normal", "weu", "weu")
    assert group.reasons().count("NoHealthyMember") == 1
    group.round({"weu": DOWN, "neu": UP, "eus": DOWN})
    assert group.where == ("FailedOver", "neu", "neu"), "fails over as soon as another member is healthy"


def test_manual_mode_never_switches_by_itself_but_follows_the_field() -> None:
    group = Group(spec(mode="manual"))
    group.round()
    group.rounds([DOWN] * 6)
    assert group.where == ("Normal", "weu", "weu")
    assert group.reasons().count("MemberUnhealthy") == 1
    group.spec = spec(mode="manual", activeMember="neu")
    switched = group.round()
    assert group.where == ("FailedOver", "neu", "neu")
    assert [n.reason for n in switched.notes] == ["MemberRecovered", "Switched"]
    assert "warning" not in switched.notes[1].message


def test_automatic_mode_does_not_fail_back_by_itself() -> None:
    group = Group(spec())
    group.round()
    group.rounds([DOWN] * 3)
    group.rounds([UP] * 10)
    assert group.where == ("FailedOver", "neu", "neu")
    assert "MemberRecovered" in group.reasons()
    assert failback_instruction(group.spec, group.state) == "set spec.activeMember to weu"


def test_failback_moves_producers_first_and_consumers_once_drained() -> None:
    group = Group(spec())
    group.round()
    group.rounds([DOWN] * 3)
    group.spec = spec(activeMember="weu")  # the failback request: a change of the field
    started = group.round()
    assert group.where == ("FailingBack", "weu", "neu")
    assert [(s.roles, s.source, s.target) for s in started.switches] == [("producers", "neu", "weu")]
    assert group.state.producer_since == group.now and group.state.consumer_since == T0 + timedelta(
        seconds=40
    )

    group.round(drain=Drain(pending=(ORDERS_HELD,)))
    group.round(drain=Drain(error="connection refused"))
    assert group.where == ("FailingBack", "weu", "neu"), "not drained yet: consumers stay"
    assert group.state.drain_pending == ()
    group.round(drain=Drain(pending=(ORDERS_HELD,)))
    assert group.state.drain_pending == (ORDERS_HELD,)

    done = group.round(drain=Drain())
    assert group.where == ("Normal", "weu", "weu")
    assert [(s.roles, s.source, s.target, s.cause) for s in done.switches] == [
        ("consumers", "neu", "weu", "drained")
    ]
    assert [n.reason for n in done.notes] == ["FailbackComplete"]
    assert group.state.drain_pending == ()


@pytest.mark.parametrize(
    ("drain", "reason", "kind"),
    [
        (Drain(pending=(ORDERS_HELD,)), "DrainTimeout", "Warning"),
        (Drain(error="no answer within the probe timeout"), "DrainTimeout", "Warning"),
        (None, "FailbackComplete", "Normal"),  # no drain entities: the timeout is the wait
    ],
)
def test_consumers_switch_back_after_the_drain_timeout(drain: Drain | None, reason: str, kind: str) -> None:
    group = Group(spec(mode="manual", activeMember="neu"))
    group.round()
    group.spec = spec(mode="manual")
    group.round(after=1)
    assert group.where == ("FailingBack", "weu", "neu")
    group.round(drain=drain, after=59)
    assert group.where == ("FailingBack", "weu", "neu")
    last = group.round(drain=drain, after=1)
    assert group.where == ("Normal", "weu", "weu")
    [note] = last.notes
    assert (note.type, note.reason) == (kind, reason)
    assert "after 60s" in note.message


def test_the_producers_member_failing_during_failback_fails_over_again() -> None:
    group = Group(spec(mode="manual", activeMember="neu"))
    group.round()
    group.spec = spec(activeMember="weu")  # automatic mode, failback requested
    group.round()
    assert group.where == ("FailingBack", "weu", "neu")
    group.rounds([DOWN] * 3)
    assert group.where == ("FailedOver", "neu", "neu")


def test_in_automatic_mode_only_a_change_of_active_member_is_a_request() -> None:
    group = Group(spec(activeMember="weu"))
    group.round()
    group.rounds([DOWN] * 3)
    assert group.where == ("FailedOver", "neu", "neu")
    group.spec = spec(activeMember="weu", probe={"failureThreshold": 5, "entity": {"queueName": "orders"}})
    group.rounds([UP] * 3)
    assert group.where == ("FailedOver", "neu", "neu"), "an unrelated spec change is no failback request"
    assert "set spec.switchRequest to a new value" in failback_instruction(group.spec, group.state)
    group.spec = spec(activeMember="neu")  # acknowledge where the group is: nothing moves
    group.round()
    assert group.where == ("FailedOver", "neu", "neu")
    group.spec = spec()  # field removed: the default, the primary, is requested
    group.round()
    assert group.where == ("FailingBack", "weu", "neu")


def test_a_planned_switch_between_secondaries_moves_both_roles() -> None:
    group = Group(spec(mode="manual", activeMember="neu"))
    group.round()
    group.spec = spec(mode="manual", activeMember="eus")
    moved = group.round({"weu": UP, "neu": UP, "eus": DOWN})
    assert group.where == ("FailedOver", "eus", "eus")
    assert "warning: eus failed its last probe" in moved.notes[-1].message


def test_removing_the_active_member_moves_the_group_to_the_requested_one() -> None:
    group = Group(spec(mode="manual", activeMember="eus"))
    group.round()
    group.spec = spec(mode="manual", members=spec().model_dump(by_alias=True)["members"][:2])
    moved = group.round()
    assert group.where == ("Normal", "weu", "weu")
    assert moved.switches[0].cause == "memberRemoved"


def test_unchanged_probe_results_are_not_rewritten_until_they_are_a_minute_old() -> None:
    group = Group(spec())
    group.round()
    written = group.state.health["weu"].last_probe_time
    group.round(after=30)
    assert group.state.health["weu"].last_probe_time == written
    group.round(after=30)
    assert group.state.health["weu"].last_probe_time == group.now


def test_conditions_follow_the_phase() -> None:
    group = Group(spec())
    group.round()
    by_type = {c.type: c for c in assess(group.spec, group.state).updates}
    assert (by_type["Ready"].status, by_type["Ready"].reason) == ("True", "Active")
    assert (by_type["FailedOver"].status, by_type["FailedOver"].reason) == ("False", "OnPrimary")

    group.rounds([DOWN])
    by_type = {c.type: c for c in assess(group.spec, group.state).updates}
    assert (by_type["Reconciling"].status, by_type["Reconciling"].reason) == ("True", "ActiveMemberUnhealthy")
    assert "1 of 3 failed probes" in by_type["Ready"].message

    group.rounds([DOWN, DOWN])
    by_type = {c.type: c for c in assess(group.spec, group.state).updates}
    assert (by_type["Ready"].status, by_type["FailedOver"].reason) == ("True", "OnSecondary")
    assert "set spec.activeMember to weu" in by_type["FailedOver"].message

    group.spec = spec(activeMember="weu")
    group.round(drain=None)
    group.round(drain=Drain(pending=(ORDERS_HELD,)))
    by_type = {c.type: c for c in assess(group.spec, group.state).updates}
    assert (by_type["Reconciling"].status, by_type["Reconciling"].reason) == ("True", "FailingBack")
    assert "still to drain: orders" in by_type["Reconciling"].message
    assert (by_type["FailedOver"].status, by_type["FailedOver"].reason) == ("True", "FailingBack")
