"""What the replication app's driver reports about its task, and how that becomes the ReplicationTask's
status: written by the app (the status file, `lag.json` and `translation.json` beside it, all served at
`/status` on its metrics port), read by the operator (over HTTP in a cluster, from the files in local
mode); defined once here."""

from __future__ import annotations

from typing import Any

LAG_FILE = "lag.json"
TRANSLATION_FILE = "translation.json"
STATUS_PATH = "/status"


def task_status_fields(document: dict[str, Any]) -> dict[str, Any]:
    """The ReplicationTask `status` fields (camelCase) from a driver's `/status` document: the counts,
    the lag per source partition, and the last checkpoint translation. Empty for an empty document."""
    fields: dict[str, Any] = {}
    targets = (document.get("targets") or {}).values()
    if "targets" in document:
        fields["eventsReplicated"] = sum(int(t.get("eventsOut", 0)) for t in targets)
        fields["eventsDeadLettered"] = sum(int(t.get("deadLettered", 0)) for t in targets)
    for key, name in (("lastBatchTime", "lastBatchTime"), ("replicationLagSeconds", "replicationLagSeconds")):
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
    }
    partitions = [
        {
            "partition": partition,
            "eventsBehind": entry.get("eventsBehind"),
            "secondsBehind": entry.get("secondsBehind"),
            "sourceSequence": entry.get("sourceSequence"),
            "replicatedSequence": entry.get("replicatedSequence"),
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
