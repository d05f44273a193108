"""Replication lag and RPO per source partition, measured on the driver of an Event Hubs task.

Every ``POLL_SECONDS`` the monitor reads each source partition's tail (last sequence number and its
enqueue time, one management read per partition over a kept link), where the task is in it (the end
offsets of Spark's last committed batch), and the source enqueue time of the last event it read there
(the status file's ``partitions``, written by the sink's commit). Per partition:

* **events behind**: last sequence number at the source minus the last one replicated;
* **seconds behind**: enqueue time of the newest source event minus that of the last replicated one
  (0 when nothing is behind);

and for the task: the sum of events, the worst partition's seconds, and the **RPO estimate**: what a
failover now would leave behind, the enqueue-time span of the events not replicated yet (the worst
partition's seconds behind). It writes them to ``lag.json`` beside the status file, whole (the sink's
commit owns the status file; two writers of one file would lose each other's updates).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from federator_contract.driverstatus import LAG_FILE
from federator_contract.files import write_atomically
from federator_spark.connections import Connection, eventhub_consumer
from federator_spark.eventhubs_management import HubManagement
from federator_spark.metrics import iso_epoch

logger = logging.getLogger(__name__)

POLL_SECONDS = 5.0


def committed_offsets(checkpoint: Path) -> dict[str, int] | None:
    """The source positions of Spark's last committed batch (``offsets/<n>`` of the highest ``n`` with
    a ``commits/<n>``): per partition, the last sequence number the task is done with."""
    commits = checkpoint / "commits"
    if not commits.is_dir():
        return None
    batches = sorted((int(p.name) for p in commits.iterdir() if p.name.isdigit()), reverse=True)
    for batch in batches:
        path = checkpoint / "offsets" / str(batch)
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= 3:
                return {str(k): int(v) for k, v in json.loads(lines[2]).items()}
    return None


def measure(
    tails: Mapping[str, Mapping[str, Any]],
    handled: Mapping[str, int] | None,
    positions: Mapping[str, Mapping[str, Any]],
    measured_at: float,
) -> dict[str, Any]:
    """The lag document: ``tails`` per partition as ``HubManagement.partition_properties`` reads them,
    ``handled`` the committed positions, ``positions`` the status file's ``partitions``."""
    partitions: dict[str, dict[str, Any]] = {}
    for partition, tail in sorted(tails.items(), key=lambda item: int(item[0])):
        last = int(tail["last_enqueued_sequence_number"])
        replicated = (handled or {}).get(partition)
        entry: dict[str, Any] = {"sourceSequence": last, "replicatedSequence": replicated}
        if tail.get("last_enqueued_time") is not None:
            entry["sourceEnqueuedTime"] = iso_epoch(tail["last_enqueued_time"])
        position = positions.get(partition) or {}
        known = position.get("sequence") == replicated and position.get("enqueuedEpoch") is not None
        if known:
            entry["replicatedEnqueuedTime"] = iso_epoch(position["enqueuedEpoch"])
        if replicated is None:
            entry["eventsBehind"] = entry["secondsBehind"] = None
        else:
            floor = int(tail["beginning_sequence_number"]) - 1  # what retention removed is not behind
            behind = 0 if tail.get("is_empty") else max(0, last - max(replicated, floor))
            entry["eventsBehind"] = behind
            if behind == 0:
                entry["secondsBehind"] = 0.0
            elif known and tail.get("last_enqueued_time") is not None:
                entry["secondsBehind"] = round(
                    max(0.0, tail["last_enqueued_time"] - position["enqueuedEpoch"]), 3
                )
            else:
                entry["secondsBehind"] = None
        partitions[partition] = entry
    return {"measuredAt": iso_epoch(measured_at), **summarise(partitions), "partitions": partitions}


def summarise(partitions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The task's figures: the sum of events behind, the worst partition (by seconds, then events) and
    the RPO estimate; None where a partition's figure is unknown."""
    events = [p["eventsBehind"] for p in partitions.values()]
    seconds = [p["secondsBehind"] for p in partitions.values()]
    worst = max(
        partitions,
        key=lambda p: (partitions[p]["secondsBehind"] or 0.0, partitions[p]["eventsBehind"] or 0),
        default=None,
    )
    unknown = None in seconds
    return {
        "eventsBehind": None if None in events else sum(events),
        "secondsBehind": None if unknown else max(seconds, default=0.0),
        "rpoSeconds": None if unknown else max(seconds, default=0.0),
        "worstPartition": worst,
    }


class LagMonitor:
    """The driver's thread measuring ``source``'s lag into ``<status dir>/lag.json``."""

    def __init__(
        self, source: Connection, event_hub: str, consumer_group: str, checkpoint: Path, status_file: Path
    ) -> None:
        self.checkpoint = checkpoint
        self.status_file = status_file
        self.path = status_file.parent / LAG_FILE
        self._client = eventhub_consumer(source, event_hub, consumer_group)
        self._management = HubManagement(self._client, sdk_retry=False)  # the next poll asks again
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="federator-lag", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def measure_now(self) -> dict[str, Any]:
        handled = committed_offsets(self.checkpoint)
        tails = {p: self._management.partition_properties(p) for p in self._management.partition_ids()}
        status = _read_json(self.status_file)
        document = measure(tails, handled, status.get("partitions", {}), time.time())
        write_atomically(self.path, json.dumps(document, indent=2, sort_keys=True))
        return document

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.measure_now()
                except Exception as error:  # source unreachable: the last figures stay, with their time
                    logger.info("lag not measured: %r", error)
                self._stop.wait(POLL_SECONDS)
        finally:
            self._close()  # here too: a measurement that outlasts stop()'s wait ends with its connection

    def stop(self) -> None:
        """Stop measuring and close the connections (whether the thread ever started or not)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(POLL_SECONDS + 30)
        if self._thread.is_alive():
            logger.warning("the lag monitor of %s is still measuring; it closes when done", self.path)
            return  # closing under its feet would let it open a connection no one closes
        self._close()

    def _close(self) -> None:
        try:
            self._management.close()
        finally:
            self._client.close()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        content: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return content
