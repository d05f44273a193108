"""A local run's tasks as a group's round reads them: followers, the member they read, and their lag."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from federator.failover.replication import replication_to_members
from federator.failover.timings import followers
from federator.local.state import StateDir
from federator.local.taskobjects import task_objects
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.taskconfig import TaskConfig

FOLLOWING: dict[str, Any] = {
    "source": {
        "eventHub": {
            "connection": {"failoverGroupRef": {"name": "orders"}},
            "eventHubName": "orders",
            "consumerGroup": "replication",
        }
    },
    "targets": [
        {
            "name": "archive",
            "eventHub": {"connection": {"emulator": {"namespace": "archive"}}, "eventHubName": "a"},
        }
    ],
}
GEO = {  # copies the primary to the secondary: what a forced switch to the secondary leaves behind
    "source": {"eventHub": {"connection": {"emulator": {"namespace": "primary"}}, "eventHubName": "orders"}},
    "targets": [
        {
            "name": "dr",
            "eventHub": {"connection": {"emulator": {"namespace": "secondary"}}, "eventHubName": "orders"},
        }
    ],
}
GROUP = FailoverGroupSpec.model_validate(
    {
        "primaryMember": "primary",
        "members": [
            {
                "name": "primary",
                "connection": {"emulator": {"namespace": "primary"}},
                "endpoint": "localhost",
            },
            {
                "name": "secondary",
                "connection": {"emulator": {"namespace": "secondary"}},
                "endpoint": "localhost",
            },
        ],
        "probe": {"entity": {"eventHubName": "orders"}},
    }
)


def write_config(state: StateDir, name: str, member: str, written: float) -> None:
    concrete = {
        **FOLLOWING,
        "source": {
            "eventHub": {**FOLLOWING["source"]["eventHub"], "connection": {"emulator": {"namespace": member}}}
        },
    }
    config = TaskConfig.model_validate(
        {
            "metadata": {"namespace": "default", "name": name},
            "checkpointLocation": str(state.checkpoint("default", name)),
            "spec": concrete,
            "following": {"group": "orders", "member": member, "skewSeconds": 5},
        }
    )
    path = state.task_config("default", name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config.model_dump_json(by_alias=True))
    os.utime(path, (written, written))


def write_status(state: StateDir, name: str, status: dict[str, Any]) -> None:
    path = state.status_file("default", name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(status))


def at(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def read(
    specs: dict[str, dict[str, Any]], state: StateDir, namespace: str = "default"
) -> list[dict[str, Any]]:
    return asyncio.run(task_objects(specs, state)(namespace))


def test_a_follower_reads_the_member_its_config_names_once_a_batch_ended_there(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    switched = 1_800_000_000.0
    write_config(state, "archive", "secondary", switched)
    write_status(state, "archive", {"lastBatchTime": at(switched + 2)})

    found = followers("orders", read({"default/archive": FOLLOWING}, state))

    assert [(f.task, f.member, f.last_batch) for f in found] == [
        ("archive", "secondary", datetime.fromtimestamp(switched + 2, UTC))
    ]


def test_a_batch_that_ended_before_the_switch_rewrote_its_config_is_not_one_on_the_new_member(
    tmp_path: Path,
) -> None:
    state = StateDir(tmp_path)
    switched = 1_800_000_000.0
    write_config(state, "archive", "secondary", switched)
    write_status(state, "archive", {"lastBatchTime": at(switched - 3)})

    found = followers("orders", read({"default/archive": FOLLOWING}, state))

    assert [(f.task, f.member) for f in found] == [("archive", None)]


def test_the_lag_of_a_task_copying_between_members_is_what_a_switch_would_leave(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    write_status(state, "geo", {"lastBatchTime": at(1_000.0)})
    # The driver writes its lag beside the status file, whole (federator_spark/lag.py): the sink's commit
    # owns the status file.
    lag = {"measuredAt": at(995.0), "eventsBehind": 42, "rpoSeconds": 1.5, "partitions": {}}
    (state.status_file("default", "geo").parent / "lag.json").write_text(json.dumps(lag))

    copying = replication_to_members(GROUP, "primary", read({"default/geo": GEO}, state))

    assert copying["secondary"].tasks == ("geo",)
    assert (copying["secondary"].events_behind, copying["secondary"].rpo_seconds) == (42, 1.5)


def test_only_the_tasks_of_the_groups_namespace_are_read(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    specs = {"default/archive": FOLLOWING, "other/archive": FOLLOWING}

    assert [t["metadata"]["namespace"] for t in read(specs, state, "other")] == ["other"]
    assert read(specs, state)[0]["status"] == {}  # nothing written yet: no batch, no member
