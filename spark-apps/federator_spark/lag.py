"""Replication lag and RPO per source partition, measured on the driver of an Event Hubs task.

Every ``POLL_SECONDS`` the monitor reads each source partition's tail (last sequence number and its
enqueue time, one management read per partition over a kept link), where the task is in it (the end
offsets of Spark's last committed batch), and the source enqueue time of the last event it read there
(the status file's ``partitions``, written by the sink's commit). Per partition:

* **events behind**: last sequence number at the source minus the last one replicated;
* **seconds behind**: enqueue time of the newest source event minus that of the last replicated one
  (0 when nothing is behind);
* **events unread**: last sequence number at the source minus the last one handed to a batch (the end
  offsets of Spark's last *planned* batch): what a forced switch now would leave behind, since the
  batch in flight has read its events already and still writes them;

and for the task: the sum of events, the worst partition's seconds, and the **RPO estimate**: what a
failover now would leave behind, the enqueue-time span of the events not replicated yet (the worst
partition's seconds behind). It writes them to ``lag.json`` beside the status file, whole (the sink's
commit owns the status file; two writers of one file would lose each other's updates).

A measurement that fails (the source's namespace is down) is tried again every ``DOWN_POLL_SECONDS``,
and each failed one notes the task's committed positions (a local read). The first that succeeds again
counts the outage exactly (``lastOutage``): the source's tails then (nothing is enqueued while it is
down) against the positions the task had replicated when it was last seen down, which it has not gone
past since (no batch is planned while the source does not answer). A batch in flight when the source
went down is not committed while some of its partitions wait for their events, but the parts written
before are replicated: ``reached`` reads them back from the targets and the count starts past them (where
they cannot be read back, the count is said to be inexact). A switch away from the source's namespace in
that outage left exactly those events behind; the task replicates them now, late.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federator_contract.driverstatus import LAG_FILE
from federator_contract.files import write_atomically
from federator_spark.connections import Connection, eventhub_consumer
from federator_spark.eventhubs_management import HubManagement
from federator_spark.metrics import iso_epoch

logger = logging.getLogger(__name__)

POLL_SECONDS = 5.0
DOWN_POLL_SECONDS = 1.0
"""While the source does not answer: its return is seen within a second, before the task has gone far."""
READ_TIMEOUT_SECONDS = 3.0
"""A management read of a source that went silent (accepts, never answers) fails after this: a measurement
is never held up longer, nor is the thread once it is asked to stop."""
STOP_WAIT_SECONDS = 1.0


def committed_offsets(checkpoint: Path) -> dict[str, int] | None:
    """The source positions of Spark's last committed batch (``offsets/<n>`` of the highest ``n`` with
    a ``commits/<n>``): per partition, the last sequence number the task is done with."""
    return _newest_offsets(checkpoint, checkpoint / "commits")


def read_offsets(checkpoint: Path) -> dict[str, int] | None:
    """The source positions of Spark's last planned batch (``offsets/<n>`` of the highest ``n``,
    committed or not): per partition, the last sequence number handed to a batch."""
    return _newest_offsets(checkpoint, checkpoint / "offsets")


def in_flight(checkpoint: Path) -> tuple[int, dict[str, int]] | None:
    """Spark's newest planned batch while it is not committed: its id and end offsets (None: none)."""
    batches = _batches(checkpoint / "offsets")
    if not batches or (checkpoint / "commits" / str(batches[0])).exists():
        return None
    ends = _offsets(checkpoint, batches[0])
    return (batches[0], ends) if ends is not None else None


def _newest_offsets(checkpoint: Path, log: Path) -> dict[str, int] | None:
    """The end offsets of the newest batch ``log`` (Spark's commit or offset log) names."""
    for batch in _batches(log):
        found = _offsets(checkpoint, batch)
        if found is not None:
            return found
    return None


def _batches(log: Path) -> list[int]:
    """The batch ids a Spark log names, newest first."""
    if not log.is_dir():
        return []
    return sorted((int(p.name) for p in log.iterdir() if p.name.isdigit()), reverse=True)


def _offsets(checkpoint: Path, batch: int) -> dict[str, int] | None:
    path = checkpoint / "offsets" / str(batch)
    if not path.exists():
        return None
    lines = path.read_text().splitlines()
    return {str(k): int(v) for k, v in json.loads(lines[2]).items()} if len(lines) >= 3 else None


def measure(
    tails: Mapping[str, Mapping[str, Any]],
    handled: Mapping[str, int] | None,
    positions: Mapping[str, Mapping[str, Any]],
    measured_at: float,
    read: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The lag document: ``tails`` per partition as ``HubManagement.partition_properties`` reads them,
    ``handled`` the committed positions, ``positions`` the status file's ``partitions``, ``read`` the
    positions handed to a batch (None: not counted)."""
    partitions: dict[str, dict[str, Any]] = {}
    for partition, tail in sorted(tails.items(), key=lambda item: int(item[0])):
        last = int(tail["last_enqueued_sequence_number"])
        replicated = (handled or {}).get(partition)
        entry: dict[str, Any] = {"sourceSequence": last, "replicatedSequence": replicated}
        if read is not None:
            entry.update(_unread(tail, replicated, read.get(partition)))
        if tail.get("last_enqueued_time") is not None:
            entry["sourceEnqueuedTime"] = iso_epoch(tail["last_enqueued_time"])
        position = positions.get(partition) or {}
        known = position.get("sequence") == replicated and position.get("enqueuedEpoch") is not None
        if known:
            entry["replicatedEnqueuedTime"] = iso_epoch(position["enqueuedEpoch"])
        if replicated is None:
            entry["eventsBehind"] = entry["secondsBehind"] = None
        else:
            behind = _beyond(tail, replicated)  # what retention removed is not behind
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
    document = {"measuredAt": iso_epoch(measured_at), **summarise(partitions), "partitions": partitions}
    if read is not None:
        unread = [p["eventsUnread"] for p in partitions.values()]
        document["eventsUnread"] = None if None in unread else sum(unread)
    return document


def _beyond(tail: Mapping[str, Any], position: int) -> int:
    """Events at the source after ``position`` that it still holds (retention removed the others)."""
    if tail.get("is_empty"):
        return 0
    floor = int(tail["beginning_sequence_number"]) - 1
    return max(0, int(tail["last_enqueued_sequence_number"]) - max(position, floor))


def _unread(tail: Mapping[str, Any], replicated: int | None, read: int | None) -> dict[str, Any]:
    """A partition's events not handed to a batch yet (a batch planned is at or past the committed
    one; a position not known yet leaves the figure unknown)."""
    position = max(read, replicated) if read is not None and replicated is not None else read
    return {
        "readSequence": position,
        "eventsUnread": None if position is None else _beyond(tail, position),
    }


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


@dataclass
class Down:
    """An outage of the source as the monitor sees it: its measurements failing since ``since``."""

    last_seen_up: str | None
    """``measuredAt`` of the last measurement before it (None: none known)."""
    since: float
    until: float
    """The last failed measurement, where ``handled`` and ``positions`` were taken."""
    handled: dict[str, int] | None
    positions: dict[str, Any]
    planned: dict[str, int] | None = None
    """The positions of the last batch planned then (past ``handled``: a batch in flight)."""
    uncertain: bool = False
    """A batch was in flight and how far its writes got could not be told: ``handled`` may be short of
    what the targets hold."""


def outage(down: Down, tails: Mapping[str, Mapping[str, Any]], up_again: float) -> dict[str, Any]:
    """The ``lastOutage`` document, from the source's tails once it answers again: what it held that the
    task had not replicated by ``down.until`` (left behind, still there), and what retention removed
    before it was (expired: lost). Exact unless events came after ``down.until`` before ``up_again``."""
    left = measure(tails, down.handled, down.positions, up_again)
    expired = 0
    for partition, tail in tails.items():
        replicated = (down.handled or {}).get(partition)
        if replicated is not None and not tail.get("is_empty"):
            gone = min(int(tail["beginning_sequence_number"]) - 1, int(tail["last_enqueued_sequence_number"]))
            expired += max(0, gone - replicated)
    newest = [t["last_enqueued_time"] for t in tails.values() if t.get("last_enqueued_time") is not None]
    return {
        "lastSeenUp": down.last_seen_up,
        "downSince": iso_epoch(down.since),
        "downUntil": iso_epoch(down.until),
        "upAgain": iso_epoch(up_again),
        "eventsLeftBehind": left["eventsBehind"],
        "eventsExpired": expired,
        "rpoSeconds": left["rpoSeconds"],
        "exact": all(t <= down.until for t in newest) and not down.uncertain,
    }


Reached = Callable[[int, Mapping[str, int], Mapping[str, int]], dict[str, int]]
"""How far the writes of a batch in flight got, per source partition: the last sequence number of its
part that reached the targets (a partition left out: none), given the batch id, the committed positions
and the batch's end offsets. Raises when it cannot be told."""


class LagMonitor:
    """The driver's thread measuring ``source``'s lag into ``<status dir>/lag.json``. ``reached``: how
    far a batch in flight got (see :data:`Reached`; None: it cannot be told). When the source goes down
    during a batch, the partitions whose part was written before it did are replicated past the
    committed positions: the count of the outage starts from there."""

    def __init__(
        self,
        source: Connection,
        event_hub: str,
        consumer_group: str,
        checkpoint: Path,
        status_file: Path,
        reached: Reached | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.status_file = status_file
        self._reached = reached
        self._whole: tuple[int, dict[str, int]] | None = None
        """The batch in flight last read back, and its partitions written whole."""
        self.path = status_file.parent / LAG_FILE
        self._client = eventhub_consumer(source, event_hub, consumer_group)
        # A failed read is the next poll's to ask again; a silent source's within READ_TIMEOUT_SECONDS.
        self._management = HubManagement(self._client, sdk_retry=False, timeout=READ_TIMEOUT_SECONDS)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="federator-lag", daemon=True)
        before = _read_json(self.path)  # a driver started again keeps what its predecessor counted
        self._last_up: str | None = before.get("measuredAt")
        self._last_outage: dict[str, Any] | None = before.get("lastOutage")
        self._down: Down | None = None

    def start(self) -> None:
        self._thread.start()

    def measure_now(self) -> dict[str, Any]:
        """Measure and write ``lag.json``; raises when the source does not answer (noted as down)."""
        handled, read = committed_offsets(self.checkpoint), read_offsets(self.checkpoint)
        positions = _read_json(self.status_file).get("partitions", {})
        try:
            ids = self._management.partition_ids()
            tails = {p: self._management.partition_properties(p) for p in ids}
        except Exception:
            self._went_down(handled, positions, read)
            raise
        now = time.time()
        document = measure(tails, handled, positions, now, read)
        if self._down is not None:
            self._last_outage = outage(self._down, tails, now)
            self._told(self._down)
            self._down = None
        if self._last_outage is not None:
            document["lastOutage"] = self._last_outage
        self._last_up = document["measuredAt"]
        write_atomically(self.path, json.dumps(document, indent=2, sort_keys=True))
        return document

    def _went_down(
        self, handled: dict[str, int] | None, positions: dict[str, Any], planned: dict[str, int] | None
    ) -> None:
        """A failed measurement: the outage begins, or goes on with the task's positions now."""
        handled, uncertain = self._written(handled)
        now = time.time()
        since = self._down.since if self._down is not None else now
        self._down = Down(self._last_up, since, now, handled, positions, planned, uncertain)

    def _written(self, committed: dict[str, int] | None) -> tuple[dict[str, int] | None, bool]:
        """The positions replicated: ``committed``, and past it what a batch in flight wrote; whether a
        batch's writes could not be told. A partition whose part was written whole is not read again."""
        flight = in_flight(self.checkpoint)
        if committed is None or flight is None:
            return committed, False
        batch, ends = flight
        whole = self._whole[1] if self._whole is not None and self._whole[0] == batch else {}
        todo = {p: end for p, end in ends.items() if end > committed.get(p, -1) and p not in whole}
        try:
            reached = {**whole, **self._read_back(batch, committed, todo)}
        except Exception as error:  # the count stays an upper bound, said to be inexact
            if self._whole is None or self._whole[0] != batch:
                logger.warning(
                    "how far batch %d got before the source went down is not known: %r", batch, error
                )
            self._whole = (batch, {})
            return committed, True
        self._whole = (batch, {p: s for p, s in reached.items() if s >= ends[p]})
        partitions = {*committed, *reached}
        return {p: max(committed.get(p, -1), reached.get(p, -1)) for p in partitions}, False

    def _read_back(self, batch: int, committed: dict[str, int], todo: dict[str, int]) -> dict[str, int]:
        if not todo:
            return {}
        if self._reached is None:
            raise LookupError("the task's writes cannot be read back")
        return self._reached(batch, committed, todo)

    def _told(self, down: Down) -> None:
        """Logs the outage counted, with the positions it was counted from."""
        short = {p: end for p, end in (down.planned or {}).items() if end > (down.handled or {}).get(p, -1)}
        logger.info(
            "source answers again: %s; counted from the positions replicated %s%s",
            self._last_outage,
            down.handled,
            f" (a batch in flight had not written up to {short})" if short else "",
        )

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.measure_now()
                except Exception as error:  # source unreachable: the last figures stay, with their time
                    logger.info("lag not measured: %r", error)
                self._stop.wait(DOWN_POLL_SECONDS if self._down is not None else POLL_SECONDS)
        finally:
            self._close()  # here too: a measurement that outlasts stop()'s wait ends with its connection

    def stop(self) -> None:
        """Stop measuring and close the connections (whether the thread ever started or not). A
        measurement under way is not waited for beyond ``STOP_WAIT_SECONDS``: it ends within
        ``READ_TIMEOUT_SECONDS`` (a source gone silent) and the thread closes the connections then."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT_SECONDS)
        if self._thread.is_alive():
            logger.info("the lag monitor of %s is still measuring; it closes when done", self.path)
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
