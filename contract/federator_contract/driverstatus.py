"""What the replication app's driver reports about its task, and how that becomes the ReplicationTask's
status: written by the app (the status file, `lag.json` and `translation.json` beside it, all served at
`/status` on its metrics port), read by the operator (over HTTP in a cluster, from the files in local
mode); defined once here.

A driver that runs several tasks (``federator_spark.host``: a shared application) serves each task's
document at :func:`task_status_path` instead, and at `/status` the list of its tasks
(``{"tasks": [{"namespace", "name", "state", "reason", "message"}], "invalidConfigs": [...]}``, states
and reasons below): a task config it cannot run is listed in `invalidConfigs` with its source (the file
or ConfigMap) and the error naming the field."""

from __future__ import annotations

from typing import Any

LAG_FILE = "lag.json"
TRANSLATION_FILE = "translation.json"
STATUS_PATH = "/status"
# The status document's time of the first batch of the query's state (a following source's: per member).
FIRST_BATCH_ON_MEMBER = "firstBatchOnMemberTime"
TASKS_PATH = "/tasks"

# A shared driver's tasks, by state: its query runs; it waits for its turn to start (or initialises its
# source); its query failed and starts again after a backoff (reason and message say why).
TASK_RUNNING = "Running"
TASK_STARTING = "Starting"
TASK_FAILED = "Failed"
QUERY_FAILED = "QueryFailed"  # the reason of a failed task; the message is the error
INVALID_TASK_CONFIG = "InvalidSpec"  # a task config the driver cannot run (the operator's reason too)


def task_status_path(namespace: str, name: str) -> str:
    """Where a shared driver serves one task's status document (the shape a single-task driver serves at
    `/status`). Namespaces and names are DNS labels: nothing to escape."""
    return f"{TASKS_PATH}/{namespace}/{name}/status"


def task_status_fields(document: dict[str, Any]) -> dict[str, Any]:
    """The ReplicationTask `status` fields (camelCase) from a driver's `/status` document: the counts
    (with the events a switch or a replay found handled already), the first batch on the member a source
    follows, the lag per source partition, and the last checkpoint translation. Empty for an empty
    document."""
    fields: dict[str, Any] = {}
    targets = (document.get("targets") or {}).values()
    if "targets" in document:
        fields["eventsReplicated"] = sum(int(t.get("eventsOut", 0)) for t in targets)
        fields["eventsDeadLettered"] = sum(int(t.get("deadLettered", 0)) for t in targets)
    if "eventsDropped" in document:  # duplicates a switch or a crash would have made, avoided
        fields["eventsSkippedAfterSwitch"] = int((document["eventsDropped"] or {}).get("following", 0))
    if "replaySkipped" in document:
        fields["eventsFoundWritten"] = int(document["replaySkipped"] or 0)
    for key, name in (
        ("lastBatchTime", "lastBatchTime"),
        ("replicationLagSeconds", "replicationLagSeconds"),
        (FIRST_BATCH_ON_MEMBER, "firstBatchOnMemberTime"),
    ):
        if document.get(key) is not None:
            fields[name] = document[key]
    lag = document.get("lag")
    if lag:
        fields["lag"] = _lag(lag)
    translation = document.get("translation")
    if translation:
        fields["checkpointTranslation"] = _translation(translation)
    return fields


def _lag(lag: dict[str, Any]) -> dict[str, Any]:
    summary = {
        "measuredAt": lag.get("measuredAt"),
        "eventsBehind": lag.get("eventsBehind"),
        "secondsBehind": lag.get("secondsBehind"),
        "rpoSeconds": lag.get("rpoSeconds"),
        "worstPartition": lag.get("worstPartition"),
        "eventsUnread": lag.get("eventsUnread"),
        "lastOutage": lag.get("lastOutage"),
    }
    partitions = [
        {
            "partition": partition,
            "eventsBehind": entry.get("eventsBehind"),
            "secondsBehind": entry.get("secondsBehind"),
            "sourceSequence": entry.get("sourceSequence"),
            "replicatedSequence": entry.get("replicatedSequence"),
            "readSequence": entry.get("readSequence"),
            "eventsUnread": entry.get("eventsUnread"),
        }
        for partition, entry in sorted((lag.get("partitions") or {}).items(), key=lambda item: int(item[0]))
    ]
    return {**_present(summary), "partitions": [_present(p) for p in partitions]}


def _translation(cycle: dict[str, Any]) -> dict[str, Any]:
    groups = [
        {
            "consumerGroup": name,
            "sourceCheckpoints": group.get("source_checkpoints", 0),
            "partitionsWritten": group.get("written", 0),
            "partitionsLeftToConsumers": group.get("consumers_on_target", 0),
        }
        for name, group in sorted((cycle.get("groups") or {}).items())
    ]
    return _present({"lastCycleTime": cycle.get("at"), "consumerGroups": groups})


def _present(values: dict[str, Any]) -> dict[str, Any]:
    """Unknown figures are left out (a merge patch of null would delete them)."""
    return {k: v for k, v in values.items() if v is not None}
