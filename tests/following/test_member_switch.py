"""A FailoverGroup switch seen by the replication app: positions are kept per member, a new member's
checkpoint starts at the last replicated enqueue time minus the skew, what the task handled is carried
from member to member (failback included), and a restart on the same member changes nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from following_helpers import (
    T0,
    admitted,
    commit,
    event,
    origin_id,
    origin_partition,
    task_raw,
    write_plan,
)

from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark import following
from federator_spark.commits import CommitLog
from federator_spark.config import checkpoint_layout
from federator_spark.events import iso
from federator_spark.following import prepare


def run_batch(plan, batch, member, *partitions):
    """One batch: each of ``partitions`` is a list of events of one partition of ``member``."""
    tasks = [admitted(plan, member, events, batch)[1] for events in partitions]
    commit(plan, batch, *tasks)


def after(seconds):
    return iso(T0 + timedelta(seconds=seconds))


def test_each_member_has_its_own_checkpoint_and_the_status_file_stays_with_the_task(tmp_path):
    config = TaskConfig.from_raw(task_raw(tmp_path, "neu"))
    plan = write_plan(tmp_path, "neu")

    assert checkpoint_layout(config).query_location == f"file://{tmp_path}/checkpoint/members/neu"
    assert plan.state_dir == f"{tmp_path}/checkpoint/members/neu/federator"
    assert plan.status_file == f"{tmp_path}/checkpoint/federator/status.json"


@pytest.mark.parametrize(
    ("following", "message"),
    [
        ({"group": "orders", "member": "../weu", "skewSeconds": 60}, "following.member: String should match"),
        ({"group": "Orders", "member": "weu", "skewSeconds": 60}, "following.group: String should match"),
        ({"group": "orders", "member": "weu", "skewSeconds": -1}, "following.skewSeconds: Input should be"),
        ("weu", "following: Input should be a valid dictionary"),
    ],
)
def test_a_following_entry_that_cannot_name_a_checkpoint_is_refused(tmp_path, following, message):
    raw = {**task_raw(tmp_path, "weu"), "following": following}

    with pytest.raises(TaskConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        TaskConfig.from_raw(raw)


def test_the_first_member_starts_at_the_spec_position(tmp_path):
    plan = write_plan(tmp_path, "weu")

    assert prepare(plan.following) is None
    assert json.loads((tmp_path / "checkpoint/federator/following.json").read_text())["member"] == "weu"


def test_a_new_member_starts_at_the_slowest_partitions_last_handled_event_minus_the_skew(tmp_path):
    weu = write_plan(tmp_path, "weu", per_trigger=10)  # capped batches: partitions may lag each other
    prepare(weu.following)
    run_batch(
        weu,
        0,
        "weu",
        [event("weu", n, at=90 + n) for n in range(10)],
        [event("weu", 0, partition="1", at=40)],
    )

    neu = write_plan(tmp_path, "neu")

    assert prepare(neu.following) == after(40 - 60)


def test_when_every_batch_reads_every_partition_to_its_end_the_newest_event_bounds_it(tmp_path):
    weu = write_plan(tmp_path, "weu")
    prepare(weu.following)
    run_batch(weu, 0, "weu", [event("weu", 0, at=100)], [event("weu", 0, partition="1", at=40)])

    assert prepare(write_plan(tmp_path, "neu").following) == after(100 - 60)


def test_switching_on_before_handling_anything_keeps_the_resume_time(tmp_path):
    weu = write_plan(tmp_path, "weu")
    prepare(weu.following)
    run_batch(weu, 0, "weu", [event("weu", 0, at=100)])
    prepare(write_plan(tmp_path, "neu").following)

    assert prepare(write_plan(tmp_path, "swe").following) == after(40)


def test_a_restart_on_the_same_member_changes_nothing(tmp_path):
    weu = write_plan(tmp_path, "weu")
    prepare(weu.following)
    run_batch(weu, 0, "weu", [event("weu", 0, at=100)])
    neu = write_plan(tmp_path, "neu")
    resume = prepare(neu.following)
    carried = (tmp_path / "checkpoint/members/neu/federator/following.json").read_bytes()
    run_batch(neu, 0, "neu", [event("neu", 0, at=200)])  # handled on neu since: not carried to neu itself

    assert prepare(neu.following) == resume
    assert (tmp_path / "checkpoint/members/neu/federator/following.json").read_bytes() == carried


def test_failback_resumes_the_old_member_where_it_was_left_and_skips_what_was_handled_elsewhere(tmp_path):
    weu = write_plan(tmp_path, "weu")
    prepare(weu.following)
    run_batch(weu, 0, "weu", [event("weu", n) for n in range(10)])
    neu = write_plan(tmp_path, "neu")
    prepare(neu.following)
    copies = [event("neu", n, origin=origin_id("weu", n)) for n in range(5, 15)]  # weu 10..14 are new
    run_batch(neu, 0, "neu", [*copies, *(event("neu", n) for n in range(15, 18))])

    weu = write_plan(tmp_path, "weu")
    prepare(weu.following)
    # weu's own checkpoint resumes after 9: 10..14 came through neu meanwhile, 15 and 16 did not.
    passed, task = admitted(weu, "weu", [event("weu", n) for n in range(10, 17)], batch=1)

    assert passed == [15, 16]
    assert task.skipped == 5
    assert following.known(weu.following, 1).sequences == {
        origin_partition("weu"): 14,
        origin_partition("neu"): 17,
    }
    assert CommitLog(weu.state_dir).latest_before(1)["following"]["sequences"] == {origin_partition("weu"): 9}


def test_commit_records_accumulate_what_the_member_handled_and_hold_each_batchs_keys(tmp_path):
    weu = write_plan(tmp_path, "weu", service_bus=True)
    prepare(weu.following)
    run_batch(weu, 0, "weu", [event("weu", 0, message_id="a")])
    run_batch(weu, 1, "weu", [event("weu", 1, message_id="b")])

    record = CommitLog(weu.state_dir).latest_before(2)["following"]

    assert record["keys"] == [origin_id("weu", 1), "b"]
    assert record["enqueued"] == {"0": T0.timestamp()}


def test_service_bus_keys_are_carried_newest_first_up_to_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(following, "RECENT_KEYS", 4)
    weu = write_plan(tmp_path, "weu", service_bus=True)
    prepare(weu.following)
    for batch in range(3):
        run_batch(weu, batch, "weu", [event("weu", batch, message_id=f"m{batch}")])
    neu = write_plan(tmp_path, "neu", service_bus=True)

    assert prepare(neu.following) is None  # Service Bus cannot seek: the entity is read as it is
    assert following.known(neu.following, 0).keys == {"m2", origin_id("weu", 2), "m1", origin_id("weu", 1)}
