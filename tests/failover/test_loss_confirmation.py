"""What a forced switch left behind: estimated at the switch from the lag of the tasks copying to the new
member, counted from what they had *read* (the batch in flight still arrives), and confirmed once the
member left answers again, from each task's count of its source's outage (`status.lag.lastOutage`): the
record then says exactly how many events were not copied before it came back (copied late) and how many
it no longer holds (lost). Pure: times are given."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from test_failover_state import T0, spec
from test_planned_switch import Group, task

from federator.failover.confirmation import confirm
from federator.failover.replication import replication_to_members
from federator.failover.state import Switch
from federator.failover.timings import measure
from federator_contract.api.failovergroup import SwitchLoss, SwitchRecord

DECIDED = T0 + timedelta(seconds=4, milliseconds=300)


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def lag(behind: int, unread: int, outage: dict[str, Any] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "eventsBehind": behind,
        "eventsUnread": unread,
        "rpoSeconds": 1.5,
        "measuredAt": at(1),
    }
    if outage is not None:
        found["lastOutage"] = outage
    return found


def outage(
    left: int, *, seen_up: float = 1, up_again: float = 40, expired: int = 0, exact: bool = True
) -> dict[str, Any]:
    return {
        "lastSeenUp": at(seen_up),
        "downSince": at(seen_up + 5),
        "downUntil": at(up_again - 1),
        "upAgain": at(up_again),
        "eventsLeftBehind": left,
        "eventsExpired": expired,
        "rpoSeconds": 0.8,
        "exact": exact,
    }


def test_the_estimate_counts_from_what_the_tasks_have_read_not_from_their_last_commit() -> None:
    group = Group()
    group.request("neu")
    group.round([task("weu-to-neu", "w", "n", lag(behind=120, unread=20))])
    assert group.state.last_loss is not None
    assert (group.state.last_loss.events_behind, group.state.last_loss.tasks) == (20, ["weu-to-neu"])
    assert group.notes[-1][1].startswith("switched to member neu with 20 events")


def test_a_task_that_has_read_everything_leaves_nothing_behind_by_the_estimate() -> None:
    group = Group()
    group.request("neu")
    group.round([task("weu-to-neu", "w", "n", lag(behind=120, unread=0))])
    assert group.state.last_loss is None and "SwitchLoss" not in [reason for reason, _ in group.notes]


def forced_record(tasks: list[dict[str, Any]], estimate: int | None = 20) -> SwitchRecord:
    """The record of an automatic failover weu → neu decided at DECIDED, with ``tasks`` copying."""
    copying = replication_to_members(spec(), "weu", tasks)
    loss = None
    if estimate is not None:
        loss = SwitchLoss(
            member="neu", time=DECIDED, events_behind=estimate, measured_at=T0 + timedelta(seconds=1)
        )
    switch = Switch("both", "weu", "neu", "failover", T0 + timedelta(seconds=2))
    timed = measure([], [switch], decided=DECIDED, published=DECIDED, loss=loss, tasks=[], copying=copying)
    [record] = timed.records
    return record


def test_the_record_names_the_tasks_whose_count_confirms_it_and_how_old_the_estimate_is() -> None:
    tasks = [task("orders", "w", "n", lag(120, 20)), task("payments", "w", "n", lag(0, 0))]
    record = forced_record(tasks)
    assert record.loss_tasks == ["orders", "payments"]  # one caught up may still leave what came since
    assert (record.events_left_behind, record.left_behind_measured_at) == (20, T0 + timedelta(seconds=1))
    assert record.events_left_behind_confirmed is None


def test_once_every_task_counted_the_outage_the_loss_is_confirmed_with_an_event() -> None:
    before = [task("orders", "w", "n", lag(120, 20)), task("payments", "w", "n", lag(0, 0))]
    record = forced_record(before)
    back = [
        task("orders", "w", "n", lag(0, 0, outage(31, expired=2))),
        task("payments", "w", "n", lag(0, 0, outage(4))),
    ]
    done = confirm([record], back)
    [confirmed] = done.records
    assert (confirmed.events_left_behind_confirmed, confirmed.events_lost) == (31 + 2 + 4, 2)
    assert confirmed.events_left_behind == 20  # the estimate stays, beside the count
    assert confirmed.confirmed_at == T0 + timedelta(seconds=40)
    [note] = done.notes
    assert (note.type, note.reason) == ("Warning", "SwitchLossConfirmed")
    assert "it held 37 events (0.8s of enqueue time) not copied to neu before it came back" in note.message
    assert "(estimated: 20 at the switch, from a lag measured 3.3s before the switch)" in note.message
    assert note.message.endswith("copy them now, late; 2 of them are gone from weu (its retention): lost")
    assert confirm(done.records, back).notes == []  # confirmed once


def test_nothing_lost_is_a_normal_event() -> None:
    record = forced_record([task("orders", "w", "n", lag(5, 5))])
    [note] = confirm([record], [task("orders", "w", "n", lag(0, 0, outage(9)))]).notes
    assert note.type == "Normal" and note.message.endswith("none is lost")


def test_a_switch_with_no_estimate_is_counted_all_the_same() -> None:
    """Caught up by the last measurement, but events came after it."""
    record = forced_record([task("orders", "w", "n", lag(0, 0))], estimate=None)
    [note] = confirm([record], [task("orders", "w", "n", lag(0, 0, outage(12)))]).notes
    assert (
        "held 12 events (0.8s of enqueue time) not copied to neu before it came back (no estimate"
        in note.message
    )


def confirmed_by(outage_: dict[str, Any]) -> int | None:
    record = forced_record([task("orders", "w", "n", lag(5, 5))])
    [found] = confirm([record], [task("orders", "w", "n", lag(0, 0, outage_))]).records
    return found.events_left_behind_confirmed


def test_only_an_exact_count_of_an_outage_spanning_the_switch_confirms_it() -> None:
    assert confirmed_by(outage(9)) == 9
    assert confirmed_by(outage(9, seen_up=1, up_again=3)) is None  # over before the switch
    assert confirmed_by(outage(9, seen_up=6, up_again=40)) is None  # began after it: another outage
    assert confirmed_by(outage(9, exact=False)) is None  # events came after it, before it was measured


def test_a_task_that_has_not_counted_yet_holds_the_confirmation() -> None:
    record = forced_record([task("orders", "w", "n", lag(5, 5)), task("payments", "w", "n", lag(1, 1))])
    back = [task("orders", "w", "n", lag(0, 0, outage(9))), task("payments", "w", "n", lag(0, 0))]
    assert confirm([record], back).records[0].events_left_behind_confirmed is None


def test_planned_switches_and_consumers_moves_have_no_loss_to_confirm() -> None:
    tasks = [task("orders", "w", "n", lag(0, 0))]
    copying = replication_to_members(spec(), "weu", tasks)
    moves = [
        Switch("both", "weu", "neu", "planned", T0),
        Switch("consumers", "neu", "weu", "drained", T0),
    ]
    for switch in moves:
        timed = measure(
            [], [switch], decided=DECIDED, published=DECIDED, loss=None, tasks=[], copying=copying
        )
        assert timed.records[-1].loss_tasks == []


def test_a_record_in_status_round_trips() -> None:
    record = forced_record([task("orders", "w", "n", lag(5, 5))])
    [confirmed] = confirm([record], [task("orders", "w", "n", lag(0, 0, outage(9)))]).records
    dumped = confirmed.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["eventsLeftBehindConfirmed"] == 9 and dumped["lossTasks"] == ["orders"]
    assert SwitchRecord.model_validate(dumped) == confirmed
    assert isinstance(confirmed.confirmed_at, datetime)
