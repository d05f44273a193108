"""Helpers for unit tests of following a FailoverGroup: task configs as the operator writes them for a
member, events read from a member, and batches committed the way the replication writer commits them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from federator_contract.taskconfig import TaskConfig
from federator_spark.events import Event
from federator_spark.following import Follower, known
from federator_spark.plan import WritePlan
from federator_spark.planning import plan_from_task
from federator_spark.sinks.replication import ReplicationWriter, TaskReport, TaskReports
from support.connections import write_connection_files

T0 = datetime(2026, 11, 1, tzinfo=UTC)
# Member → its namespace's host, as the source identity names it.
HOSTS = {"weu": "weu.example:5672", "neu": "neu.example:5672", "swe": "swe.example:5672"}


def task_raw(
    tmp_path: Path, member: str, *, service_bus: bool = False, per_trigger: int | None = None
) -> dict[str, Any]:
    """The task config the operator writes while ``member`` is the group's consumers' member."""
    connection = {"emulator": {"namespace": member}}
    source = (
        {"serviceBus": {"connection": connection, "queueName": "orders"}}
        if service_bus
        else {"eventHub": {"connection": connection, "eventHubName": "orders"}}
    )
    target = {"eventHub": {"connection": {"emulator": {"namespace": "dr"}}, "eventHubName": "copy"}}
    spec: dict[str, Any] = {"source": source, "targets": [{"name": "copy", **target}]}
    if per_trigger is not None:
        spec["runtime"] = {"maxEventsPerTrigger": per_trigger}
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": "orders", "namespace": "default", "generation": 1},
        "spec": spec,
        "checkpointLocation": f"file://{tmp_path / 'checkpoint'}",
        "emulatorConnectionFiles": write_connection_files(
            tmp_path / "connections",
            {
                name: f"Endpoint=sb://{host}/;SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true"
                for name, host in {**HOSTS, "dr": "dr.example:5672"}.items()
            },
        ),
        "following": {"group": "orders", "member": member, "switchedAt": None, "skewSeconds": 60},
    }


def write_plan(tmp_path: Path, member: str, **options: Any) -> WritePlan:
    return plan_from_task(TaskConfig.from_raw(task_raw(tmp_path, member, **options)))


def event(
    member: str,
    sequence: int,
    *,
    partition: str = "0",
    at: float = 0.0,
    origin: str | None = None,
    message_id: str | None = None,
) -> Event:
    """Event ``sequence`` of ``member``'s hub `orders`, enqueued ``at`` seconds after T0; ``origin`` is
    the `repl-source-id` a replicated copy carries."""
    return Event(
        body=b"{}",
        source=f"{HOSTS[member]}/orders",
        partition=partition,
        partition_count=2,
        sequence_number=sequence,
        offset=str(sequence * 100),
        enqueued_time=T0 + timedelta(seconds=at),
        partition_key=None,
        properties={"repl-source-id": origin} if origin else {},
        system_properties={"message_id": message_id} if message_id else {},
    )


def origin_partition(member: str, partition: str = "0") -> str:
    return f"{HOSTS[member]}/orders/{partition}"


def origin_id(member: str, sequence: int, partition: str = "0") -> str:
    return f"{origin_partition(member, partition)}/{sequence}"


def follower(plan: WritePlan, member: str, partition: str = "0", batch: int = 0) -> Follower:
    assert plan.following is not None
    return Follower(plan.following, known(plan.following, batch), f"{HOSTS[member]}/orders", partition)


def admitted(plan: WritePlan, member: str, events: list[Event], batch: int = 0) -> tuple[list[int], Follower]:
    """Sequence numbers of the events one write task of ``batch`` lets through, and its follower."""
    task = follower(plan, member, events[0].partition, batch)
    return [e.sequence_number for e in events if task.admit(e)], task


def commit(plan: WritePlan, batch: int, *tasks: Follower) -> None:
    """The driver's commit of a batch whose write tasks used ``tasks``."""
    reports = [TaskReports([TaskReport(following=task.report())]) for task in tasks]
    ReplicationWriter(plan).commit(list(reports), batch)


def at(epoch: float) -> float:
    """Seconds after T0."""
    return epoch - T0.timestamp()
