"""Every switch is measured: detected → decided → endpoints published → each following task flowing on
the new member (from the task's own status), and what a forced switch left behind; the record is kept in
`status.switches` (bounded) and told by a `SwitchMeasured` Event once complete. Pure: times are given."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from test_failover_state import DOWN, T0, Group, spec

from federator.failover.state import Switch
from federator.failover.timings import (
    DETECTION,
    FOLLOWING,
    HISTORY,
    MAX_FOLLOWERS,
    PUBLISHING,
    Follower,
    Timings,
    followers,
    measure,
)
from federator_contract.api.failovergroup import FailoverGroupStatus, SwitchLoss

DECIDED = T0 + timedelta(seconds=30, milliseconds=400)
PUBLISHED = DECIDED + timedelta(milliseconds=250)


def forced(target: str = "neu", roles: Any = "both") -> Switch:
    return Switch(roles, "weu", target, "requested", T0 + timedelta(seconds=30))


def switched(switch: Switch, tasks: list[Follower] | None, loss: SwitchLoss | None = None) -> Timings:
    return measure([], [switch], decided=DECIDED, published=PUBLISHED, loss=loss, tasks=tasks)


def later(timings: Timings, tasks: list[Follower], at: datetime) -> Timings:
    """A later round: no switch, the followers as their status says now."""
    return measure(timings.records, [], decided=at, published=at, loss=None, tasks=tasks)


def on(member: str, batch: datetime | None, task: str = "archive") -> Follower:
    return Follower(task, member, batch)


def test_a_failover_is_detected_at_the_first_failed_probe_and_decided_at_the_threshold() -> None:
    group = Group(spec())
    group.round()
    group.rounds([DOWN] * 3)
    [switch] = group.steps[-1].switches
    first_failure = group.now - timedelta(seconds=20)  # three rounds 10 s apart
    assert (switch.cause, switch.detected) == ("failover", first_failure)
    timings = measure([], [switch], decided=group.now, published=group.now, loss=None, tasks=[])
    [record] = timings.records
    assert (record.decided_seconds, record.published_seconds) == (20.0, 0.0)
    assert (DETECTION, 20.0) in timings.observed


def test_followers_flow_when_their_status_reads_the_new_member_with_a_batch_after_the_decision() -> None:
    timings = switched(forced(), [on("weu", DECIDED - timedelta(seconds=1))])
    [record] = timings.records
    assert (record.decided_seconds, record.published_seconds) == (0.4, 0.25)
    assert timings.observed == [(DETECTION, 0.4), (PUBLISHING, 0.25)]
    assert [(f.task, f.flowing_seconds) for f in record.followers] == [("archive", None)]
    assert not record.complete and timings.notes == []
    # Re-planned onto neu, but its last batch is still the one read from weu: not flowing yet.
    still = later(timings, [on("neu", DECIDED - timedelta(seconds=1))], DECIDED + timedelta(seconds=2))
    assert not still.records[0].complete
    flowing = later(still, [on("neu", DECIDED + timedelta(seconds=4, milliseconds=600))], DECIDED)
    [record] = flowing.records
    assert record.followers[0].flowing_seconds == 4.6 and record.complete
    assert flowing.observed == [(FOLLOWING, 4.6)]
    [note] = flowing.notes
    assert (note.type, note.reason) == ("Normal", "SwitchMeasured")
    assert note.message == (
        "switch weu → neu (requested, both): detected → decided 0.4s, decided → endpoints published 0.2s; "
        "followers flowing on neu: archive after 4.6s"
    )
    assert later(flowing, [], DECIDED).notes == [], "a complete record is told once"


def test_a_switch_seen_in_this_round_counts_from_when_the_round_really_began() -> None:
    """Status keeps whole seconds; the round's start to the microsecond does not inflate detection."""
    switch = forced()
    began = switch.detected + timedelta(milliseconds=300)
    timings = measure(
        [],
        [switch],
        decided=DECIDED,
        published=PUBLISHED,
        loss=None,
        tasks=[],
        began=(switch.detected, began),
    )
    [record] = timings.records
    assert (record.detected, record.decided_seconds) == (began, 0.1)
    earlier = measure([], [switch], decided=DECIDED, published=None, loss=None, tasks=[], began=(T0, T0))
    assert earlier.records[0].decided_seconds == 0.4, "a detection from an earlier round stays as it was"


def test_a_forced_switch_records_what_it_left_behind() -> None:
    loss = SwitchLoss(member="neu", time=T0, events_behind=120, rpo_seconds=4.5, tasks=["copy"])
    [record] = switched(forced(), [], loss).records
    assert (record.events_left_behind, record.rpo_seconds, record.complete) == (120, 4.5, True)
    [note] = switched(forced(), [], loss).notes
    assert note.message.endswith(
        "; no ReplicationTask source follows the group (or their status is not "
        "known here); left behind 120 events (4.5s of enqueue time)"
    )


def test_a_follower_that_never_flows_is_given_up_after_the_limit() -> None:
    timings = switched(forced(), [on("weu", None)])
    waiting = later(timings, [on("weu", None)], DECIDED + timedelta(minutes=9))
    assert not waiting.records[0].complete
    given_up = later(waiting, [on("weu", None)], DECIDED + timedelta(minutes=10))
    assert given_up.records[0].complete
    assert given_up.notes[0].message.endswith("followers flowing on neu: archive not flowing after 600s")


def test_producers_moving_alone_leave_the_followers_where_they_are() -> None:
    timings = switched(forced("weu", roles="producers"), [on("neu", DECIDED)])
    [record] = timings.records
    assert record.followers == [] and record.complete
    assert timings.notes[0].message.endswith("; followers stay with the consumers")


def test_a_switch_supersedes_one_still_waiting_and_the_history_is_bounded() -> None:
    timings = switched(forced(), [on("weu", None)])
    for n in range(HISTORY + 2):
        timings = measure(
            timings.records,
            [forced("eus" if n % 2 == 0 else "neu")],
            decided=DECIDED,
            published=None,
            loss=None,
            tasks=[on("weu", None)],
        )
    assert len(timings.records) == HISTORY
    assert timings.notes[0].message.endswith("archive superseded by the next switch")
    assert timings.records[-1].published_seconds is None
    assert "endpoints not published" in timings.notes[-1].message
    status = FailoverGroupStatus(switches=list(timings.records))  # the contract holds what is kept
    assert len(status.switches) == HISTORY


def test_followers_beyond_the_contracts_bound_are_not_measured() -> None:
    many = [on("weu", None, f"task-{n:03}") for n in range(MAX_FOLLOWERS + 6)]
    [record] = switched(forced(), many).records
    assert [f.task for f in record.followers] == [f.task for f in many[:MAX_FOLLOWERS]]


def test_local_mode_records_the_phases_it_can_observe() -> None:
    timings = switched(forced(), None)
    [record] = timings.records
    assert record.complete and record.followers == []
    assert "their status is not known here" in timings.notes[0].message


def test_only_sources_following_this_group_are_followers() -> None:
    def task(name: str, source: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        sink = {
            "name": "t",
            "eventHub": {"connection": {"failoverGroupRef": {"name": "orders"}}, "eventHubName": "o"},
        }
        return {
            "metadata": {"name": name},
            "spec": {"source": {"eventHub": {"connection": source, "eventHubName": "o"}}, "targets": [sink]},
            "status": status,
        }

    follows = {"failoverGroupRef": {"name": "orders"}}
    tasks = [
        task("reads-orders", follows, {"activeSourceMember": "neu", "lastBatchTime": "2026-11-01T12:00:05Z"}),
        task("reads-other", {"failoverGroupRef": {"name": "billing"}}, {}),
        task("writes-orders", {"secretRef": {"name": "w"}}, {}),
        {"metadata": {"name": "broken"}, "spec": {"source": {}}},
    ]
    assert followers("orders", tasks) == [on("neu", T0 + timedelta(seconds=5), "reads-orders")]
