"""When a shared driver acts on its task configs (``federator_spark.fleet.Passes``): every pass interval,
and at once when a look at the configs finds them changed, so a FailoverGroup switch (a follower's new
config) does not wait for the next pass; and how a follower's move to another member is told, phase by
phase (``Move``). No JVM here."""

from __future__ import annotations

from test_fleet_decisions import found, task

from federator_contract.taskconfig import TaskConfig
from federator_spark.fleet import Move, Passes, moving


def follower(member: str, switched_at: str | None = "2026-11-29T20:00:00Z") -> TaskConfig:
    raw = task("orders").model_dump(by_alias=True, exclude_none=True)
    raw["following"] = {"group": "orders", "member": member, "switchedAt": switched_at, "skewSeconds": 5}
    return TaskConfig.from_raw(raw)


def test_a_changed_config_is_acted_on_at_the_next_look_not_the_next_pass() -> None:
    passes = Passes(pass_seconds=5.0, look_seconds=0.1)
    before, after = found(task("orders")), found(task("orders", trigger=9))
    assert passes.due(before, 100.0)

    assert not passes.due(before, 100.1)
    assert passes.due(after, 100.2)
    assert not passes.due(after, 100.3)


def test_unchanged_configs_are_still_reconciled_every_pass() -> None:
    passes = Passes(pass_seconds=1.0, look_seconds=0.1)
    configs = found(task("orders"))
    moments = [100.0 + 0.1 * step for step in range(25)]

    due = [round(moment - 100.0, 1) for moment in moments if passes.due(configs, moment)]

    assert due == [0.0, 1.0, 2.0]


def test_a_look_is_never_less_often_than_a_pass() -> None:
    assert Passes(pass_seconds=0.05, look_seconds=0.1).look_seconds == 0.05


def test_a_config_that_follows_another_member_is_a_move_from_the_groups_decision() -> None:
    move = moving(follower("weu"), follower("neu"), now=1_795_982_401.0)

    assert move == Move("neu", decided=1_795_982_400.0, seen=1_795_982_401.0)
    assert moving(follower("neu"), follower("neu", switched_at=None), now=0.0) is None  # same member
    assert moving(task("orders"), follower("neu"), now=0.0) is None  # it did not follow before


def test_a_move_is_told_phase_by_phase() -> None:
    move = Move("neu", decided=100.0, seen=100.5, stopped=100.75, started=101.0)

    told = move.told(first_batch=103.0, rows=12)

    assert told == (
        "moved to member neu: config seen +0.50s → old query stopped +0.25s → new query started +0.25s → "
        "first batch done +2.00s, 12 rows (3.00s after the switch)"
    )


def test_without_the_decisions_time_the_phases_start_at_the_config() -> None:
    move = moving(follower("weu"), follower("neu", switched_at=None), now=100.0)
    assert move is not None
    move.stopped, move.started = 100.5, 101.0

    assert move.told(102.0, 0, "first trigger found nothing new") == (
        "moved to member neu: config seen → old query stopped +0.50s → new query started +0.50s → "
        "first trigger found nothing new +1.00s, 0 rows"
    )
