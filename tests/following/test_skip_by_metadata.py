"""After a FailoverGroup switch a write task skips, and counts, the events the task handled before: by
the high mark of each origin partition (Event Hubs) or by exact keys (Service Bus), recognising copies
by their `repl-source-id`. Events published to the new member directly are replicated."""

from __future__ import annotations

from following_helpers import admitted, commit, event, origin_id, origin_partition, write_plan

from federator_spark.following import prepare


def failed_over(tmp_path, *, service_bus=False):
    """weu handled events 0..9 of its partition 0 (and, Service Bus, message ids m0..m9); the task now
    follows neu."""
    weu = write_plan(tmp_path, "weu", service_bus=service_bus)
    prepare(weu.following)
    _, task = admitted(weu, "weu", [event("weu", n, message_id=f"m{n}") for n in range(10)])
    commit(weu, 0, task)
    neu = write_plan(tmp_path, "neu", service_bus=service_bus)
    prepare(neu.following)
    return neu


def test_copies_of_handled_events_are_skipped_and_later_ones_and_direct_ones_pass(tmp_path):
    neu = failed_over(tmp_path)
    events = [
        *(event("neu", n, origin=origin_id("weu", n)) for n in range(7, 13)),  # copies: 7..9 handled
        event("neu", 13),  # published to neu directly
        event("neu", 14, origin=origin_id("weu", 8, partition="1")),  # weu's partition 1: never handled
    ]

    passed, task = admitted(neu, "neu", events)

    assert passed == [10, 11, 12, 13, 14]
    assert task.skipped == 3


def test_a_copy_met_twice_passes_once_in_one_task_or_in_later_batches(tmp_path):
    """A replicator that crashed may have written a copy twice; the task forwards it once."""
    neu = failed_over(tmp_path)
    copy = origin_id("weu", 20)

    first, task = admitted(neu, "neu", [event("neu", 0, origin=copy), event("neu", 1, origin=copy)])
    commit(neu, 0, task)
    later, _ = admitted(neu, "neu", [event("neu", 2, origin=copy), event("neu", 3)], batch=1)
    replayed, _ = admitted(neu, "neu", [event("neu", 0, origin=copy), event("neu", 1, origin=copy)], batch=0)

    assert (first, later, replayed) == ([0], [3], [0])


def test_a_source_id_that_is_not_an_identity_does_not_skip(tmp_path):
    neu = failed_over(tmp_path)

    passed, _ = admitted(
        neu, "neu", [event("neu", 0, origin="something-else"), event("neu", 1, origin="a/b/0/x")]
    )

    assert passed == [0, 1]


def test_the_report_holds_the_origins_handled_and_the_last_enqueue_time(tmp_path):
    neu = failed_over(tmp_path)

    _, task = admitted(
        neu,
        "neu",
        [
            event("neu", 4, origin=origin_id("weu", 9), at=5),
            event("neu", 5, origin=origin_id("weu", 11), at=6),
        ],
    )

    report = task.report()
    assert report["sequences"] == {origin_partition("neu"): 5, origin_partition("weu"): 11}
    assert report["skipped"] == 1
    assert report["enqueued"] == {"0": event("neu", 0, at=6).enqueued_time.timestamp()}


def test_before_any_switch_nothing_is_skipped(tmp_path):
    weu = write_plan(tmp_path, "weu")
    prepare(weu.following)

    passed, task = admitted(weu, "weu", [event("weu", n) for n in range(3)])

    assert passed == [0, 1, 2]
    assert task.skipped == 0


def test_service_bus_messages_are_skipped_by_message_id_identity_or_source_id(tmp_path):
    neu = failed_over(tmp_path, service_bus=True)
    events = [
        event("neu", 100, message_id="m3"),  # a mirrored copy keeps the MessageId
        event("neu", 101, origin=origin_id("weu", 4)),  # a copy named by its source identity
        event("neu", 102, message_id="m-new"),
        event("neu", 103, message_id="m-new"),  # duplicate detection's business, not the skip's
        event("neu", 104, origin=origin_id("weu", 99)),
    ]

    passed, task = admitted(neu, "neu", events)

    assert passed == [102, 103, 104]
    assert task.skipped == 2
