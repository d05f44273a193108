"""Every field of a task's `status.lag` that the replication app's lag monitor measures reaches the
ReplicationTask's status: the mapping from the driver's `/status` document is kept by hand (the contract's
lower layer cannot import the models), so a field added to the model and written by the monitor must be
added there too, or the operator never sees it (a failover's loss was left unconfirmed that way)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from federator_contract.api.lag import PartitionLag, ReplicationLag
from federator_contract.driverstatus import task_status_fields

OUTAGE = {
    "lastSeenUp": "2026-11-29T20:00:00Z",
    "downSince": "2026-11-29T20:00:01Z",
    "downUntil": "2026-11-29T20:00:09Z",
    "upAgain": "2026-11-29T20:00:10Z",
    "eventsLeftBehind": 81,
    "eventsExpired": 0,
    "rpoSeconds": 0.4,
    "exact": True,
}


def aliases(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def sample(alias: str) -> Any:
    """A value the monitor could write for the field."""
    if alias == "lastOutage":
        return OUTAGE
    if alias == "measuredAt":
        return "2026-11-29T20:00:10Z"
    if alias == "worstPartition":
        return "1"
    return 7


def test_every_lag_field_the_monitor_writes_reaches_the_task_status() -> None:
    partition = {alias: sample(alias) for alias in aliases(PartitionLag) if alias != "partition"}
    lag = {alias: sample(alias) for alias in aliases(ReplicationLag) if alias != "partitions"}
    document = {"lag": {**lag, "partitions": {"0": partition, "1": partition}}}

    status = task_status_fields(document)["lag"]

    assert {k: v for k, v in status.items() if k != "partitions"} == lag
    assert status["partitions"] == [{"partition": "0", **partition}, {"partition": "1", **partition}]
    ReplicationLag.model_validate(status)  # and the operator can read it
