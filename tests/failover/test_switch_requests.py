"""A switch request is desired state: `spec.activeMember` with `spec.switchRequest`. Holding the same
request changes nothing (GitOps may keep it for ever, an automatic failover overrides it), a new one
moves the group whatever happened before, and a status from before `switchRequest` existed reads as a
request without one. Rounds are driven with explicit times; no I/O."""

from __future__ import annotations

from test_failover_state import DOWN, UP, Group, spec

from federator.failover.conditions import assess
from federator.failover.state import GroupState
from federator_contract.api.failovergroup import FailoverGroupStatus


def failed_over(**request: str) -> Group:
    """Automatic mode, requested onto the primary, failed over to neu by three failed probes."""
    group = Group(spec(activeMember="weu", **request))
    group.round()
    group.rounds([DOWN] * 3)
    assert group.where == ("FailedOver", "neu", "neu")
    return group


def switch_count(group: Group) -> int:
    return len([s for step in group.steps for s in step.switches])


def test_a_request_held_unchanged_survives_reconciles_after_an_automatic_failover() -> None:
    group = failed_over(switchRequest="2026-11-29T10:00:00Z")
    group.rounds([UP] * 20)
    assert group.where == ("FailedOver", "neu", "neu"), "the held request was overridden by the failover"
    assert [s.cause for step in group.steps for s in step.switches] == ["initial", "failover"]


def test_repeating_the_same_patch_does_nothing() -> None:
    group = failed_over(switchRequest="r1")
    group.spec = spec(activeMember="weu", switchRequest="r2")
    group.round()
    assert group.where == ("FailingBack", "weu", "neu")
    for _ in range(5):
        group.spec = spec(activeMember="weu", switchRequest="r2")  # the same patch, applied again
        group.round()
    causes = [s.cause for step in group.steps for s in step.switches]
    assert causes[:3] == ["initial", "failover", "requested"] and causes.count("requested") == 1
    assert group.state.request_token == "r2"


def test_a_new_request_for_the_member_the_spec_already_names_fails_back_in_one_patch() -> None:
    group = failed_over()
    by_type = {c.type: c for c in assess(group.spec, group.state).updates}
    assert "set spec.switchRequest to a new value" in by_type["FailedOver"].message
    group.spec = spec(activeMember="weu", switchRequest="2026-11-29T14:00:00Z")
    moved = group.round()
    assert group.where == ("FailingBack", "weu", "neu")
    assert [(s.roles, s.target, s.cause) for s in moved.switches] == [("producers", "weu", "requested")]


def test_a_status_written_before_switch_requests_existed_requests_nothing() -> None:
    group = failed_over()
    old = group.state.to_status().model_dump(by_alias=True, exclude_none=True)
    del old["switchRequest"]  # as an operator without the field wrote it
    group.state = GroupState.from_status(FailoverGroupStatus.model_validate(old))
    assert group.state.request_token is None
    group.rounds([UP] * 3)
    assert group.where == ("FailedOver", "neu", "neu"), "upgrading the operator must not fail back"


def test_manual_mode_keeps_the_group_on_the_desired_member() -> None:
    group = Group(spec(mode="manual", activeMember="neu", switchRequest="a"))
    group.round()
    assert group.where == ("FailedOver", "neu", "neu")
    group.spec = spec(mode="manual", activeMember="neu", switchRequest="b")
    group.rounds([UP] * 3)
    assert group.where == ("FailedOver", "neu", "neu")
    assert switch_count(group) == 1
