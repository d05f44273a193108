"""`kubectl federator failover --follow` while a failback drains the consumers' member: a drain entity
still holds messages; a task following the group from an event hub is still behind there, by its lag
(`status.drainPending` names it as such). Neither the progress line nor the timeout's message says that
a task holds messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from federator.failover.draining import followers_pending, hold_words
from federator.kubectl.failover import Patch, SwitchPlan
from federator.kubectl.failover_follow import _Progress, _report_group, _timeout_message
from federator.kubectl.model import group_status
from federator_contract.api.failovergroup import DrainHold

LEFT = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


def archive_behind(events: int) -> dict[str, object]:
    """ReplicationTask team-a/archive, following group orders from an event hub, ``events`` behind on
    neu by a lag measured after the producers left."""
    return {
        "metadata": {"name": "archive", "namespace": "team-a"},
        "spec": {
            "source": {
                "eventHub": {"connection": {"failoverGroupRef": {"name": "orders"}}, "eventHubName": "orders"}
            },
            "targets": [
                {
                    "name": "a",
                    "eventHub": {"connection": {"emulator": {"namespace": "dr"}}, "eventHubName": "o"},
                }
            ],
        },
        "status": {
            "activeSourceMember": "neu",
            "lag": {"eventsBehind": events, "measuredAt": (LEFT + timedelta(seconds=2)).isoformat()},
        },
    }


def failing_back(pending: list[DrainHold]) -> dict[str, object]:
    return {
        "metadata": {"name": "orders", "namespace": "team-a"},
        "status": {
            "phase": "FailingBack",
            "producerMember": "weu",
            "consumerMember": "neu",
            "drainPending": [hold.model_dump(by_alias=True, exclude_none=True) for hold in pending],
        },
    }


def plan() -> SwitchPlan:
    return SwitchPlan(
        "team-a", "orders", "manual", "weu", "weu", True, "weu", "neu", {}, Patch({}, "activeMember: weu")
    )


def pending() -> list[DrainHold]:
    [task] = followers_pending("orders", "neu", LEFT, [archive_behind(37)]) or ()
    return [DrainHold(entity="orders"), task]


def test_a_task_still_behind_is_named_with_its_namespace_and_how_far_behind() -> None:
    assert hold_words(pending()[1]) == "task team-a/archive still 37 behind on neu"


def test_the_progress_line_says_what_holds_the_drain(capsys: pytest.CaptureFixture[str]) -> None:
    group = failing_back(pending())
    _report_group(_Progress(0.0), group_status(group), group)
    said = " ".join(capsys.readouterr().out.split())  # the console wraps at its width (80 in CI)
    assert "draining neu: orders still hold messages; task team-a/archive still 37 behind on neu" in said
    assert "archive still 37 behind on neu still hold" not in said


def test_the_timeout_says_what_holds_the_drain() -> None:
    message = _timeout_message(plan(), group_status(failing_back(pending())), _Progress(0.0))
    assert (
        "; draining neu: orders still hold messages; task team-a/archive still 37 behind on neu." in message
    )
    assert "holding messages" not in message


def test_a_drain_held_by_tasks_only_says_nothing_about_messages() -> None:
    [task] = followers_pending("orders", "neu", LEFT, [archive_behind(5)]) or ()
    message = _timeout_message(plan(), group_status(failing_back([task])), _Progress(0.0))
    assert "draining neu: task team-a/archive still 5 behind on neu." in message
    assert "messages" not in message
