"""`status.drainPending` says what each entry is: a drain entity still holding messages (`entity`) or a task
that has not replicated what producers left on the consumers' member (`task`: namespace, name, member,
whether its lag was measured since producers left, how far behind). A status an older operator wrote (each
entry a string: an entity's name, or the task's words) still reads, into the same shape; fields a newer
operator adds are kept."""

from __future__ import annotations

import pytest

from federator.failover.draining import drain_words, hold_words
from federator.failover.state import GroupState
from federator.status.results import written
from federator_contract.api.failovergroup import DrainHold, DrainingTask, FailoverGroupStatus

ARCHIVE = {"namespace": "shop", "name": "archive", "member": "neu"}


def read(entries: list[object]) -> list[DrainHold]:
    return FailoverGroupStatus.model_validate({"drainPending": entries}).drain_pending


def test_the_operator_writes_each_entry_as_what_it_is() -> None:
    behind = DrainHold(task=DrainingTask(**ARCHIVE, events_behind=37))
    state = GroupState(phase="FailingBack", drain_pending=(DrainHold(entity="orders"), behind))

    patched = written(state.to_status())["drainPending"]  # as the status patch carries it

    assert patched == [
        {"entity": "orders"},
        {"task": {**ARCHIVE, "lagMeasured": True, "eventsBehind": 37}},
    ]
    assert GroupState.of({"status": {"drainPending": patched}}).drain_pending == state.drain_pending


@pytest.mark.parametrize(
    ("older", "task"),
    [
        ("task shop/archive still 37 behind on neu", DrainingTask(**ARCHIVE, events_behind=37)),
        ("task shop/archive still behind on neu (how far not known)", DrainingTask(**ARCHIVE)),
        (
            "task shop/archive: its lag on neu not measured since producers left",
            DrainingTask(**ARCHIVE, lag_measured=False),
        ),
        (
            "ReplicationTask shop/archive: 37 events on neu not replicated yet",
            DrainingTask(**ARCHIVE, events_behind=37),
        ),
        (
            "ReplicationTask shop/archive: its lag on neu not measured since producers left",
            DrainingTask(**ARCHIVE, lag_measured=False),
        ),
    ],
)
def test_a_task_an_older_operator_wrote_in_words_is_read_as_a_task(older: str, task: DrainingTask) -> None:
    assert read(["orders", older]) == [DrainHold(entity="orders"), DrainHold(task=task)]


def test_words_that_are_neither_an_entity_nor_a_task_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="drainPending entry 'three words here': neither an entity's name"):
        read(["three words here"])


def test_an_entry_of_a_kind_a_newer_operator_knows_is_kept_and_never_taken_for_an_entity() -> None:
    [newer] = read([{"consumerGroup": {"name": "billing", "member": "neu"}}])

    assert newer.model_dump(by_alias=True, exclude_none=True) == {
        "consumerGroup": {"name": "billing", "member": "neu"}
    }
    assert drain_words("neu", [newer]) == "draining neu: an entry of a kind this version does not know"


def test_the_words_come_from_the_entries_kinds_not_from_their_spelling() -> None:
    """An entity is an entity whatever its name; a task's words are made from its fields."""
    held = read([{"entity": "orders"}, {"task": {**ARCHIVE, "eventsBehind": 5}}])
    unmeasured = DrainHold(task=DrainingTask(**ARCHIVE, lag_measured=False))

    assert (
        drain_words("neu", held)
        == "draining neu: orders still hold messages; task shop/archive still 5 behind on neu"
    )
    assert hold_words(unmeasured) == "task shop/archive: its lag on neu not measured since producers left"
