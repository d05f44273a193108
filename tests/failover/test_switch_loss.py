"""What a forced switch says it left behind is the lag of the tasks copying to the member switched to, as
last measured: a member that went down cannot be measured, so its figure is the one from before it went,
and the `SwitchLoss` Event says how old that figure is (events that came, and events copied, since are
not in it)."""

from __future__ import annotations

from datetime import timedelta

from test_failover_state import T0, spec
from test_planned_switch import Group, task

from federator.failover.replication import replication_to_members


def measured(seconds_after_t0: float) -> str:
    return (T0 + timedelta(seconds=seconds_after_t0)).isoformat().replace("+00:00", "Z")


def test_a_members_figure_is_as_old_as_the_oldest_lag_of_the_tasks_copying_to_it() -> None:
    tasks = [
        task("orders", "w", "n", {"eventsBehind": 5, "rpoSeconds": 0.1, "measuredAt": measured(4)}),
        task("payments", "w", "n", {"eventsBehind": 7, "rpoSeconds": 0.3, "measuredAt": measured(1)}),
    ]
    found = replication_to_members(spec(), "weu", tasks)["neu"]
    assert (found.events_behind, found.measured_at) == (12, T0 + timedelta(seconds=1))


def test_a_lag_without_its_time_leaves_the_figure_without_one() -> None:
    tasks = [
        task("orders", "w", "n", {"eventsBehind": 5, "rpoSeconds": 0.1, "measuredAt": measured(4)}),
        task("payments", "w", "n", {"eventsBehind": 7, "rpoSeconds": 0.3}),
    ]
    assert replication_to_members(spec(), "weu", tasks)["neu"].measured_at is None


def test_the_switch_loss_event_says_how_old_the_estimate_is() -> None:
    group = Group()  # its first round is at T0 + 10 s
    group.request("neu")
    lag = {"eventsBehind": 120, "rpoSeconds": 4.5, "measuredAt": measured(16.5)}
    group.round([task("weu-to-neu", "w", "n", lag)])  # at T0 + 20 s
    reason, message = group.notes[-1]
    assert reason == "SwitchLoss"
    assert message.endswith(
        "with 120 events, 4.5 s (tasks weu-to-neu) not replicated to it yet, "
        "as their lag was measured 3.5s before the switch"
    )
    assert group.state.last_loss is not None and group.state.last_loss.events_behind == 120


def test_an_estimate_of_unknown_age_says_nothing_of_its_age() -> None:
    group = Group()
    group.request("neu")
    group.round([task("weu-to-neu", "w", "n", {"eventsBehind": 120, "rpoSeconds": 4.5})])
    assert group.notes[-1][1].endswith("not replicated to it yet")
