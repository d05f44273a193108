"""The replication app's side of following a FailoverGroup: the resume contract of
docs/patterns/failover.md.

A task whose source follows a group gets the member the group publishes for consumers (its connection,
and ``following: {group, member, switchedAt, skewSeconds}`` in the task config); a switch changes both
and restarts the app. The app then neither loses nor repeats what it replicated:

* **Positions per member.** Spark's offsets, the Service Bus spool, commit records and editor state name
  one entity on one namespace, so each member has its own checkpoint sub-location
  (:class:`~federator_contract.checkpoints.CheckpointLayout`, ``<checkpoint>/members/<member>``).
* **What the task handled.** Each batch's commit record carries ``following`` (:func:`fold`): per origin
  partition (``<host>/<entity>/<partition>``) the highest sequence number handled, of the event itself
  and of the event its ``repl-source-id`` names; per partition read, the source enqueue time of the last
  event handled; for a Service Bus source, the keys of the messages handled.
* **The switch** (:func:`prepare`, on the driver before the query starts). The task's
  ``<checkpoint>/federator/following.json`` names the member it ran on last. When that is another member,
  everything the task handled there (and carried there before) is carried to the new member's
  ``members/<member>/federator/following.json``, with the time a new checkpoint on it starts from: the
  source enqueue time up to which every event was handled, minus ``skewSeconds``. A member the task
  returns to (failback) keeps its own positions: it resumes where the task left it, so nothing that
  arrived there meanwhile is lost, and what the task handled elsewhere is skipped. A member's first
  batch keeps the start it was planned from until it is committed (:func:`first_batch_start`).
* **The skip** (:class:`Follower`, per write task). An Event Hubs event is skipped (and counted) when its
  own identity or the identity its ``repl-source-id`` names is at or below the high mark of that origin
  partition. This relies on copies of one partition arriving in the partition's order, as Federator's
  replication writes them (partition *i* → *i* between hubs of equal partition counts, which failover
  requires). Events published to the member directly carry no ``repl-source-id`` and are new unless their
  own identity was handled. A Service Bus source has neither replay nor a stable order, so it is read as
  it is (no seek) and a message is skipped by exact keys: its MessageId, its identity, its
  ``repl-source-id``, against the newest :data:`RECENT_KEYS` keys the task handled on other members.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from federator_contract.checkpoints import CheckpointLayout
from federator_contract.files import write_atomically
from federator_contract.names import SOURCE_ID_PROPERTY
from federator_spark import metrics
from federator_spark.commits import CommitLog
from federator_spark.events import Event, iso

logger = logging.getLogger(__name__)

STATE_FILE = "following.json"  # the task's: the member it ran on last; a member's: what was carried to it
START_FILE = "start.json"  # a member's: where its first batch starts (epoch seconds; null: the spec's)
# Service Bus keys carried from member to member, newest first: about 50,000 messages of three keys. Older
# ones are forgotten, so a message handled that long ago and met again on another member is repeated.
RECENT_KEYS = 150_000


@dataclass(frozen=True)
class FollowPlan:
    """What the driver and the write tasks need to follow a group (picklable)."""

    member: str
    skew_seconds: int
    by_position: bool
    """Event Hubs: high marks per origin partition, and a new member's checkpoint starts at an enqueue
    time. Service Bus: exact keys, and the entity is read as it is."""
    covers_all_partitions: bool
    """Every batch reads every partition to its end (no ``maxEventsPerTrigger``), so everything enqueued
    up to a batch's newest event was read, whatever its partition."""
    layout: CheckpointLayout

    def state_dir(self, member: str | None = None) -> Path:
        """A member's state dir (commit records, what was carried to it); default: the followed one."""
        return self.layout.member_state_dir(member or self.member)


# ------------------------------------------------------------------------------------------ write tasks


@dataclass(frozen=True)
class Known:
    """What the task handled before a batch."""

    sequences: dict[str, int]  # origin partition → highest sequence number
    keys: frozenset[str]  # Service Bus: MessageIds and identities handled on other members


_CARRIED: dict[str, tuple[int, Known]] = {}  # per worker process: path → (mtime, content); read once per run


def known(plan: FollowPlan, batch_id: int) -> Known:
    """What was carried to this member, and (Event Hubs) what the member's batches before ``batch_id``
    handled: the newest earlier commit record, so a replayed batch decides as its first attempt did."""
    carried = _carried(plan.state_dir() / STATE_FILE)
    if not plan.by_position:
        return carried
    record = CommitLog(str(plan.state_dir())).latest_before(batch_id) or {}
    own: dict[str, int] = (record.get("following") or {}).get("sequences") or {}
    if not own:
        return carried
    sequences = dict(carried.sequences)
    for key, sequence in own.items():
        sequences[key] = max(sequence, sequences.get(key, -1))
    return Known(sequences, carried.keys)


def _carried(path: Path) -> Known:
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        return Known({}, frozenset())
    cached = _CARRIED.get(str(path))
    if cached is None or cached[0] != stamp:
        carried = json.loads(path.read_text())
        cached = stamp, Known(dict(carried.get("sequences", {})), frozenset(carried.get("keys", [])))
        _CARRIED[str(path)] = cached
    return cached[1]


class Follower:
    """One write task (one partition of the member) decides per event and notes what it handled."""

    def __init__(self, plan: FollowPlan, known: Known, source: str, partition: str) -> None:
        self.by_position = plan.by_position
        self.partition = partition
        self.own = f"{source}/{partition}"
        self.high = dict(known.sequences)  # grows with what this task handles
        self.own_high = self.high.get(self.own, -1)
        self.keys = known.keys
        self.handled: dict[str, int] = {}
        self.task_keys: dict[str, None] = {}  # an ordered set: reported, not checked (see _by_keys)
        self.last_enqueued: float | None = None
        self.skipped = 0

    def admit(self, event: Event) -> bool:
        """False when the task handled the event before (counted as skipped). Either way it is handled
        now: its identities are noted."""
        new = self._by_position(event) if self.by_position else self._by_keys(event)
        if not new:
            self.skipped += 1
        enqueued = event.enqueued_time.timestamp()
        if self.last_enqueued is None or enqueued > self.last_enqueued:
            self.last_enqueued = enqueued
        return new

    def _by_position(self, event: Event) -> bool:
        sequence = event.sequence_number
        new = sequence > self.own_high
        if new:
            self.own_high = self.handled[self.own] = sequence
        origin = event.properties.get(SOURCE_ID_PROPERTY)
        if origin is not None:
            key, _, number = origin.rpartition("/")
            if key and number.isdigit():  # anything else is not ours: the event counts as unreplicated
                origin_sequence = int(number)
                if origin_sequence <= self.high.get(key, -1):
                    new = False
                else:
                    self.high[key] = self.handled[key] = origin_sequence
        return new

    def _by_keys(self, event: Event) -> bool:
        # Only against other members: on its own entity the source recognises redeliveries itself, and
        # two messages with one MessageId are for the entity's duplicate detection to judge.
        keys = [event.identity]
        origin = event.properties.get(SOURCE_ID_PROPERTY)
        if origin:
            keys.append(origin)
        message_id = event.system_properties.get("message_id")
        if message_id:
            keys.append(message_id)
        self.task_keys.update(dict.fromkeys(keys))
        return not any(key in self.keys for key in keys)

    def report(self) -> dict[str, Any]:
        """For the driver's :func:`fold`."""
        return {
            "sequences": self.handled,
            "enqueued": {self.partition: self.last_enqueued} if self.last_enqueued is not None else {},
            "skipped": self.skipped,
            "keys": list(self.task_keys),
        }


def open_task(plan: FollowPlan, batch_id: int, first: Event) -> Follower:
    """The follower of the write task of batch ``batch_id`` whose first event is ``first``."""
    return Follower(plan, known(plan, batch_id), first.source, first.partition)


# ------------------------------------------------------------------------------------------ driver


def fold(
    plan: FollowPlan, previous: dict[str, Any] | None, reports: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """A batch's ``following`` commit record entry: what the task handled on this member up to and
    including the batch (``previous`` is the newest earlier commit record), and the batch's own keys."""
    before = (previous or {}).get("following") or {}
    sequences: dict[str, int] = dict(before.get("sequences", {}))
    enqueued: dict[str, float] = dict(before.get("enqueued", {}))
    covered: float | None = before.get("covered")
    skipped: int = before.get("skipped", 0)
    keys_total: int = before.get("keysTotal", 0)
    keys: list[str] = []
    newest: float | None = None
    for report in reports:
        for key, sequence in report["sequences"].items():
            if sequence > sequences.get(key, -1):
                sequences[key] = sequence
        for partition, moment in report["enqueued"].items():
            enqueued[partition] = max(moment, enqueued.get(partition, moment))
            newest = moment if newest is None else max(newest, moment)
        skipped += report["skipped"]
        keys.extend(report["keys"])
    if plan.covers_all_partitions and newest is not None:
        covered = newest if covered is None else max(covered, newest)
    return {
        "sequences": sequences,
        "enqueued": enqueued,
        "covered": covered,
        "skipped": skipped,
        "keys": keys,
        "keysTotal": keys_total + len(keys),  # every key noted so far: how far back RECENT_KEYS reach
    }


def oldest_with_recent_keys(log: CommitLog, oldest: int, floor: int, newest: dict[str, Any]) -> int:
    """The oldest commit record to keep when records before ``floor`` may go but the newest RECENT_KEYS
    keys (``newest`` is the ``following`` entry of the record being written) must stay: walks forward
    from ``oldest``, the oldest kept so far (usually one record read per batch)."""
    total = newest["keysTotal"]
    while oldest < floor:
        record = log.read(oldest)
        if record is not None:
            noted = (record.get("following") or {}).get("keysTotal")
            if noted is not None and total - noted < RECENT_KEYS:
                break  # its keys are among the newest RECENT_KEYS
        oldest += 1
    return oldest


def resume_from(state: dict[str, Any], earlier: float | None, skew_seconds: int) -> float | None:
    """The source enqueue time (epoch seconds) a new checkpoint on the next member starts from: every
    event enqueued before it on the member left was handled, minus the skew (clock drift between
    namespaces, and how much later a copy may be enqueued). Each partition's last handled event bounds it,
    or the newest event of batches that read every partition to its end, whichever is later. ``earlier``,
    where the member left was itself started, bounds it too: alone when the task handled nothing there."""
    candidates = [earlier] if earlier is not None else []
    enqueued = state.get("enqueued") or {}
    if enqueued:
        watermark = min(enqueued.values())
        if state.get("covered") is not None:
            watermark = max(watermark, state["covered"])
        candidates.append(watermark - skew_seconds)
    return max(candidates) if candidates else None


def carry(plan: FollowPlan, previous: str) -> dict[str, Any]:
    """Everything the task handled until it left member ``previous``, for the member it goes to."""
    directory = plan.state_dir(previous)
    before = _read(directory / STATE_FILE) or {}
    log = CommitLog(str(directory))
    state = (log.newest() or {}).get("following") or {}
    sequences = dict(before.get("sequences", {}))
    for key, sequence in (state.get("sequences") or {}).items():
        sequences[key] = max(sequence, sequences.get(key, -1))
    return {
        "from": previous,
        "sequences": sequences,
        "keys": [] if plan.by_position else _recent_keys(log, before.get("keys", [])),
        "resumeFrom": resume_from(state, before.get("resumeFrom"), plan.skew_seconds)
        if plan.by_position
        else None,
    }


def _recent_keys(log: CommitLog, earlier: list[str]) -> list[str]:
    """Newest first: the keys of the member's batches, then those carried to it; at most RECENT_KEYS."""
    found: dict[str, None] = {}
    for batch in sorted(log.batches(), reverse=True):
        if len(found) >= RECENT_KEYS:
            break
        record = log.read(batch) or {}
        found.update(dict.fromkeys(reversed((record.get("following") or {}).get("keys", []))))
    found.update(dict.fromkeys(earlier))
    return list(found)[:RECENT_KEYS]


def prepare(plan: FollowPlan) -> str | None:
    """Switch bookkeeping, on the driver before the query starts. Returns where a checkpoint that is new
    on this member starts (ISO 8601; Spark uses it only when the member's checkpoint has no positions), or
    None for the spec's start position (the first member, or a Service Bus source)."""
    pointer = plan.layout.task_state_dir / STATE_FILE
    last = _read(pointer)
    carried_path = plan.state_dir() / STATE_FILE
    if last is None or last["member"] != plan.member:
        if last is not None:
            carried = carry(plan, last["member"])
            _write(carried_path, carried)
            metrics.begin_stay(str(plan.layout.status_file))  # its next batch is its first there
            logger.info(
                "following: switched from member %s to %s; %d origin partitions and %d keys handled before "
                "are skipped; a new checkpoint starts at %s",
                last["member"],
                plan.member,
                len(carried["sequences"]),
                len(carried["keys"]),
                _iso(carried["resumeFrom"]) or "the spec's start position",
            )
        # Written last: a crash before it repeats the switch, from the same records.
        _write(pointer, {"member": plan.member, "since": _iso(time.time())})
    resume = (_read(carried_path) or {}).get("resumeFrom")
    return _iso(first_batch_start(plan, resume))


def first_batch_start(plan: FollowPlan, resume: float | None) -> float | None:
    """Where the member's checkpoint starts: ``resume`` while Spark has planned no batch in it; once it has,
    the start its first batch was planned from. Until a batch is committed there, Spark asks for the start
    again at every start of the query, to run that batch again: a start carried by a later switch lies
    past the batch's end, and the batch, replayed, read nothing (under load a first batch still running at
    the next switch lost its events so). A checkpoint planned before the start was noted starts at the
    spec's position (None)."""
    noted = plan.state_dir() / START_FILE
    if not _planned(plan.layout.member_dir(plan.member)):
        _write(noted, {"start": resume})
        return resume
    start: float | None = (_read(noted) or {}).get("start")
    if start != resume:
        logger.info(
            "following: member %s's first batch is not committed yet: it starts at %s, as it was planned",
            plan.member,
            _iso(start) or "the spec's start position",
        )
    return start


def _planned(checkpoint: Path) -> bool:
    """Whether Spark planned a batch in ``checkpoint`` (its offset log names one)."""
    offsets = checkpoint / "offsets"
    return offsets.is_dir() and any(entry.name.isdigit() for entry in offsets.iterdir())


def _iso(epoch: float | None) -> str | None:
    return iso(datetime.fromtimestamp(epoch, UTC)) if epoch is not None else None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        content: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return content


def _write(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(content, separators=(",", ":"), sort_keys=True) + "\n", durable=True)
