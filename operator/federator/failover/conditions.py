"""A FailoverGroup's conditions from its state: the kstatus triad (Ready when the endpoints are published
and the producers' member is healthy; Reconciling while failing back or waiting for a member to recover)
and `FailedOver`, which says where the group is and how to get back."""

from __future__ import annotations

from dataclasses import dataclass

from federator import reasons
from federator.failover.draining import hold_words
from federator.failover.replication import Replication, lossless_condition
from federator.failover.state import GroupState
from federator.status import conditions as cond
from federator.status.conditions import ConditionUpdate
from federator_contract.api.failovergroup import FailoverGroupSpec

FAILED_OVER = "FailedOver"


@dataclass(frozen=True)
class Assessment:
    """A group's conditions: the kstatus triad, which a failure to publish replaces, and the group's own."""

    triad: list[ConditionUpdate]
    """`Ready`, `Reconciling`, `Stalled`."""
    own: list[ConditionUpdate]
    """`FailedOver`, and `LosslessFailover` when the replication to the members is known."""

    @property
    def updates(self) -> list[ConditionUpdate]:
        return [*self.triad, *self.own]


def assess(spec: FailoverGroupSpec, state: GroupState, replication: Replication | None = None) -> Assessment:
    """The conditions once the endpoints are published (publishing failures are the caller's to report);
    with `replication`, also whether a planned failover now would lose anything."""
    triad, failed = _triad(spec, state), failed_over(spec, state)
    lossless = [lossless_condition(state.producer, replication)] if replication is not None else []
    return Assessment(triad, [failed, *lossless])


def _triad(spec: FailoverGroupSpec, state: GroupState) -> list[ConditionUpdate]:
    producer, consumer = state.producer, state.consumer
    if state.phase == "FailingBack":
        deadline = state.producer_since
        held = ", ".join(map(hold_words, state.drain_pending))
        pending = f"; still to drain: {held}" if held else ""
        return cond.reconciling(
            reasons.FAILING_BACK,
            f"producers use {producer} again since {cond.timestamp(deadline)}; consumers stay on {consumer} "
            f"until it is drained, at most {spec.failback.drain_timeout_seconds}s{pending}",
        )
    health = state.health.get(producer or "")
    if health is None or not health.healthy:
        detail = health.message if health is not None else "not probed yet"
        if spec.mode == "automatic":
            action = (
                f"{health.consecutive_failures if health else 0} of {spec.probe.failure_threshold} failed "
                "probes before an automatic failover"
            )
        else:
            action = "manual mode: switch with spec.activeMember"
        return cond.reconciling(
            reasons.ACTIVE_MEMBER_UNHEALTHY, f"member {producer} does not answer probes ({detail}); {action}"
        )
    where = f"member {producer}" + (" (failed over)" if state.phase == "FailedOver" else "")
    return cond.ready(reasons.ACTIVE, f"producers and consumers use {where}; endpoints published")


def failed_over(spec: FailoverGroupSpec, state: GroupState) -> ConditionUpdate:
    primary = spec.primary_member
    if state.phase == "Normal":
        return ConditionUpdate(FAILED_OVER, "False", reasons.ON_PRIMARY, f"on the primary, {primary}")
    if state.phase == "FailingBack":
        return ConditionUpdate(
            FAILED_OVER,
            "True",
            reasons.FAILING_BACK,
            f"failing back to {primary}: consumers on {state.consumer}",
        )
    return ConditionUpdate(
        FAILED_OVER,
        "True",
        reasons.ON_SECONDARY,
        f"producers and consumers use {state.producer}, not the primary {primary}; to fail back, "
        + failback_instruction(spec, state),
    )


def failback_instruction(spec: FailoverGroupSpec, state: GroupState) -> str:
    """What to change so the group fails back, as one patch."""
    primary = spec.primary_member
    if spec.active_member != primary:
        return f"set spec.activeMember to {primary}"
    return (
        f"set spec.switchRequest to a new value (e.g. the time): spec.activeMember names {primary} "
        f"already, but the automatic failover to {state.producer} overrode that request and holding it "
        "requests nothing (`kubectl federator failback` makes that one patch)"
    )
