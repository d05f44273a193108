"""A failback's drain is proven only by a look taken a little while after the producers left the member: a
send a producer began before it saw the switch lands there after the switch, and a look taken before it
landed would let the consumers (and the tasks copying for them) move away from it for good."""

from __future__ import annotations

from datetime import timedelta

from test_failback_drain import archive, archive_on_neu, stamp
from test_failover_state import T0, UP, spec

from federator.failover.draining import followers_pending
from federator.failover.state import Drain, GroupState, step

LEFT = T0  # when the producers left neu
TOO_SOON, LATE_ENOUGH = 1.5, 2.0  # seconds after: a send begun before the switch may land in between


def caught_up(seconds_after_they_left: float) -> dict[str, object]:
    lag = {"eventsBehind": 0, "measuredAt": stamp(LEFT + timedelta(seconds=seconds_after_they_left))}
    return archive({"activeSourceMember": "neu", "lag": lag})


def test_a_task_caught_up_right_after_the_producers_left_is_not_yet_drained() -> None:
    assert followers_pending("orders", "neu", LEFT, [caught_up(TOO_SOON)]) == (
        archive_on_neu(measured=False),
    )
    assert followers_pending("orders", "neu", LEFT, [caught_up(LATE_ENOUGH)]) == ()


def failing_back() -> GroupState:
    return GroupState(
        phase="FailingBack",
        producer="weu",
        consumer="neu",
        producer_since=LEFT,
        consumer_since=LEFT - timedelta(minutes=5),
        requested="weu",
        request_token="",
    )


def test_drain_entities_found_empty_right_after_the_producers_left_keep_the_consumers_there() -> None:
    group = spec(activeMember="weu")
    probes = {m.name: UP for m in group.members}

    too_soon = step(group, failing_back(), probes, Drain(), LEFT + timedelta(seconds=TOO_SOON))
    later = step(group, failing_back(), probes, Drain(), LEFT + timedelta(seconds=LATE_ENOUGH))

    assert (too_soon.state.phase, too_soon.state.consumer) == ("FailingBack", "neu")
    assert (later.state.phase, later.state.consumer) == ("Normal", "weu")
