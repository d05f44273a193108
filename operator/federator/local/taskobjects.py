"""The ReplicationTasks of a local run as a group's round reads them in a cluster (`GroupPorts.tasks`):
the spec as written, and a status made of what the app reports after every batch (`status.json`: counts,
`lastBatchTime`, `lag`) and the member its source reads now (`activeSourceMember`, from the `task.json`
local mode wrote for the query). With them a group measures when each follower flows after a switch
(`status.switches[].followers[].flowingSeconds`), and what the tasks copying between its members have
left (planned switches, `eventsLeftBehind`)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from federator.local.observe import read_status
from federator.local.state import StateDir
from federator_contract.api.replicationtask import ReplicationTaskStatus
from federator_contract.driverstatus import LAG_FILE, task_status_fields
from federator_contract.taskconfig import TaskConfig

TaskObjects = Callable[[str], Coroutine[Any, Any, list[dict[str, Any]]]]


def task_objects(specs: Mapping[str, Mapping[str, Any]], state: StateDir) -> TaskObjects:
    """``specs``: `namespace/name` → the task's spec as its manifest has it (a followed group by name)."""

    async def tasks(namespace: str) -> list[dict[str, Any]]:
        found = []
        for key, spec in specs.items():
            task_namespace, name = key.split("/", 1)
            if task_namespace == namespace:
                found.append(
                    {
                        "metadata": {"namespace": namespace, "name": name},
                        "spec": dict(spec),
                        "status": task_status(state, namespace, name),
                    }
                )
        return found

    return tasks


def task_status(state: StateDir, namespace: str, name: str) -> dict[str, Any]:
    """The task's status fields, as a cluster's operator would write them from the driver's `/status`:
    the status file, with the lag the driver measures beside it."""
    path = state.status_file(namespace, name)
    document = read_status(path)
    with contextlib.suppress(FileNotFoundError, ValueError):  # not measured yet
        document["lag"] = json.loads((path.parent / LAG_FILE).read_text(encoding="utf-8"))
    status = ReplicationTaskStatus.model_validate(task_status_fields(document))
    seen = [t for t in (status.last_batch_time, status.first_batch_on_member_time) if t is not None]
    member = source_member(state, namespace, name, max(seen, default=None))
    if member is not None:
        status = status.model_copy(update={"active_source_member": member})
    return status.model_dump(by_alias=True, mode="json", exclude_unset=True)


def source_member(state: StateDir, namespace: str, name: str, last_batch: datetime | None) -> str | None:
    """The member the task's source reads, once a batch ended after its config named it (or its source
    found the member with nothing new for it: `firstBatchOnMemberTime` without a batch): a switch
    rewrites the config before the query moves, and a batch the query on the member left ends meanwhile
    must not count as one on the new member."""
    path = state.task_config(namespace, name)
    try:
        config = TaskConfig.model_validate_json(path.read_text(encoding="utf-8"))
        written = path.stat().st_mtime
    except (OSError, ValidationError):
        return None
    if config.following is None or last_batch is None:
        return None
    # Batch times are whole seconds: a batch in the second the config was written counts.
    return config.following.member if last_batch.timestamp() >= int(written) else None
