"""A follower's flowing time is its first batch on the new member, as its driver recorded it
(`firstBatchOnMemberTime`), however late a round sees its status: not the first `lastBatchTime` a round
happens to see. A first batch on the member from before the decision is from an earlier stay there: the
task has not moved yet."""

from __future__ import annotations

from datetime import timedelta

from test_switch_timings import DECIDED, forced, later, switched

from federator.failover.timings import FOLLOWING, Follower, followers


def moved(first: timedelta | None, last: timedelta) -> Follower:
    """The follower on neu: its first batch there and its last one, relative to the decision."""
    return Follower("archive", "neu", DECIDED + last, DECIDED + first if first is not None else None)


def test_a_round_that_sees_the_status_late_still_times_the_first_batch() -> None:
    timings = switched(forced(), [Follower("archive", "weu", DECIDED - timedelta(seconds=1))])
    # The first round after the switch sees the task 15 s later, nine batches on.
    seen = later(timings, [moved(timedelta(seconds=2.6), timedelta(seconds=15))], DECIDED)
    [record] = seen.records
    assert record.followers[0].flowing_seconds == 2.6 and record.complete
    assert seen.observed == [(FOLLOWING, 2.6)]


def test_a_first_batch_from_an_earlier_stay_on_the_member_is_not_flowing() -> None:
    timings = switched(forced(), [Follower("archive", "weu", DECIDED - timedelta(seconds=1))])
    # Re-planned onto neu; its driver last began reading neu an hour ago and has not moved yet.
    stale = later(timings, [moved(timedelta(hours=-1), timedelta(seconds=3))], DECIDED)
    assert stale.records[0].followers[0].flowing_seconds is None and not stale.records[0].complete


def test_without_the_drivers_first_batch_the_last_batch_seen_counts() -> None:
    timings = switched(forced(), [Follower("archive", "weu", DECIDED - timedelta(seconds=1))])
    seen = later(timings, [moved(None, timedelta(seconds=15))], DECIDED)
    assert seen.records[0].followers[0].flowing_seconds == 15.0


def test_followers_carry_their_first_batch_on_the_member_from_their_status() -> None:
    task = {
        "metadata": {"name": "reads-orders"},
        "spec": {
            "source": {
                "eventHub": {"connection": {"failoverGroupRef": {"name": "orders"}}, "eventHubName": "o"}
            },
            "targets": [
                {"name": "t", "eventHub": {"connection": {"secretRef": {"name": "w"}}, "eventHubName": "o"}}
            ],
        },
        "status": {
            "activeSourceMember": "neu",
            "lastBatchTime": "2026-11-01T12:00:09Z",
            "firstBatchOnMemberTime": "2026-11-01T12:00:02Z",
        },
    }
    [found] = followers("orders", [task])
    assert found.first_batch is not None and found.first_batch.isoformat() == "2026-11-01T12:00:02+00:00"
