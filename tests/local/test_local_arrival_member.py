"""A follower whose source found its new member with nothing new (an event hub makes no batch then)
reads that member as far as a group's round can tell: its driver's `firstBatchOnMemberTime`, after the
switch rewrote its config, counts as a batch there."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from test_local_task_objects import FOLLOWING, at, read, write_config, write_status

from federator.failover.timings import followers
from federator.local.state import StateDir


def test_an_arrival_without_a_batch_is_on_the_new_member(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    switched = 1_800_000_000.0
    write_config(state, "archive", "primary", switched)
    write_status(
        state, "archive", {"lastBatchTime": at(switched - 30), "firstBatchOnMemberTime": at(switched + 1)}
    )

    found = followers("orders", read({"default/archive": FOLLOWING}, state))

    assert [(f.task, f.member, f.first_batch) for f in found] == [
        ("archive", "primary", datetime.fromtimestamp(switched + 1, UTC))
    ]
