"""The Service Bus source's spool: received messages persisted under the checkpoint, so a Service Bus
entity (not replayable) can be read by Spark like a log.

``<checkpoint>/federator/servicebus/`` holds:

* ``<n>.jsonl``: spool file *n*, the messages one ``latestOffset`` call received (a header line, then
  one record per message). The source's offset is ``{"spool": n}``: a batch reads the files in
  ``(start, end]``, and a replayed batch reads the same files again.
* ``completing.json``: sequence numbers whose batch Spark committed but whose completion at the
  source has not been confirmed (the lock was lost in a crash); completed when they are redelivered.
* ``owner``: the run that holds the receiver, so a newer run of the same query takes over.

Which spool files are committed comes from Spark's own checkpoint: ``commits/<batchId>`` exists once
the sink committed batch ``batchId``, and ``offsets/<batchId>`` holds its end offset. This module is
pure file logic (no Spark, no Service Bus), so it is tested on its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import Any

from federator_contract.files import write_atomically

SPOOL_KEY = "spool"
_FORMAT = 1
_COMPLETING = "completing.json"
_OWNER = "owner"

Record = dict[str, Any]


def offset(number: int) -> dict[str, int]:
    return {SPOOL_KEY: number}


def committed_position(checkpoint: Path) -> int:
    """The spool position Spark has committed: the end offset of the newest batch in its commit log
    (0 before the first commit). The sink's commit for a batch runs before Spark logs it."""
    batches = _numbered(checkpoint / "commits")
    if not batches:
        return 0
    path = checkpoint / "offsets" / str(max(batches))
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    try:
        return int(json.loads(lines[-1])[SPOOL_KEY])
    except (KeyError, ValueError, IndexError):
        raise ValueError(
            f"{path} does not hold a Service Bus source offset: the checkpoint belongs to another query"
        ) from None


def _numbered(directory: Path) -> list[int]:
    """Spark's log files are named by batch id; temporary files (``.0.tmp``…) are skipped."""
    if not directory.is_dir():
        return []
    return [int(path.name) for path in directory.iterdir() if path.name.isdigit()]


class Spool:
    """The files of one source under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, number: int) -> Path:
        return self.directory / f"{number}.jsonl"

    def numbers(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(p.stem) for p in self.directory.glob("*.jsonl") if p.stem.isdigit())

    def write(self, number: int, source: str, records: list[Record]) -> None:
        header = {"format": _FORMAT, "source": source, "count": len(records)}
        lines = [json.dumps(header), *(json.dumps(r, sort_keys=True) for r in records)]
        write_atomically(self.path(number), _text(lines), durable=True)

    def remove(self, number: int) -> None:
        self.path(number).unlink(missing_ok=True)

    def sequence_numbers(self, number: int) -> list[int]:
        _source, records = read_spool_file(self.path(number))
        return [record["sequence_number"] for record in records]

    def load_completing(self) -> list[int]:
        path = self.directory / _COMPLETING
        if not path.exists():
            return []
        return [int(seq) for seq in json.loads(path.read_text())]

    def save_completing(self, sequence_numbers: Iterable[int]) -> None:
        completing = _text([json.dumps(sorted(sequence_numbers))])
        write_atomically(self.directory / _COMPLETING, completing, durable=True)

    def claim(self, owner: str) -> None:
        write_atomically(self.directory / _OWNER, _text([owner]), durable=True)

    def owner(self) -> str | None:
        try:
            return (self.directory / _OWNER).read_text().strip()
        except FileNotFoundError:
            return None


def read_spool_file(path: Path) -> tuple[str, Iterator[Record]]:
    """The source name and the records of one spool file (read lazily, in receive order)."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"spool file {path} is missing: the checkpoint location must be one path shared by the "
            "driver and the executors, and must not be edited while the task runs"
        ) from None
    header = json.loads(handle.readline())
    if header.get("format") != _FORMAT:
        handle.close()
        raise ValueError(f"{path}: unknown spool format {header.get('format')!r}")

    def records() -> Iterator[Record]:
        with handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)

    return header["source"], records()


class Disposition(Enum):
    NEW = "new"  # not spooled yet: goes into the next spool file
    HOLD = "hold"  # in a spool file Spark has not committed: keep its lock until it is
    COMPLETE = "complete"  # its batch is committed: complete it at the source now


class Ledger:
    """What the driver knows about spooled messages, rebuilt from the spool when a run starts.

    ``spooled`` maps the sequence numbers of uncommitted spool files to their file; ``completing``
    holds those whose batch is committed but whose completion is not confirmed, with the time (of
    ``clock``) since when they are expected back. Every change is on disk before it is acted on.
    """

    def __init__(self, spool: Spool, clock: Callable[[], float] = time.monotonic) -> None:
        self.spool = spool
        self.clock = clock
        self.spooled: dict[int, int] = {}
        for number in spool.numbers():
            for seq in spool.sequence_numbers(number):
                self.spooled[seq] = number
        now = clock()
        self.completing: dict[int, float] = dict.fromkeys(spool.load_completing(), now)

    def classify(self, sequence_number: int) -> Disposition:
        if sequence_number in self.completing:
            return Disposition.COMPLETE
        if sequence_number in self.spooled:
            return Disposition.HOLD
        return Disposition.NEW

    def pending_after(self, position: int) -> list[int]:
        """Spool files beyond ``position``: persisted before a crash, before Spark logged the batch."""
        return [n for n in self.spool.numbers() if n > position]

    def append(self, number: int, source: str, records: list[Record]) -> None:
        self.spool.write(number, source, records)
        for record in records:
            self.spooled[record["sequence_number"]] = number

    def fold(self, committed: int) -> list[int]:
        """Move the messages of spool files up to ``committed`` to ``completing`` (persisted first),
        then drop those files. Returns the sequence numbers that moved."""
        numbers = [n for n in self.spool.numbers() if n <= committed]
        if not numbers:
            return []
        moved = [seq for seq, number in self.spooled.items() if number <= committed]
        now = self.clock()
        for seq in moved:
            self.completing.setdefault(seq, now)
        self.spool.save_completing(self.completing)
        for number in numbers:
            self.spool.remove(number)
        for seq in moved:
            del self.spooled[seq]
        return moved

    def completed(self, sequence_numbers: Iterable[int]) -> None:
        done = [seq for seq in sequence_numbers if seq in self.completing]
        if not done:
            return
        for seq in done:
            del self.completing[seq]
        self.spool.save_completing(self.completing)

    def prune(self, expected_by: float) -> list[int]:
        """Forget completions expected since before ``expected_by``: called after a receive found the
        entity empty, when every such message, had it still existed, would have been redelivered (its
        lock lapsed). They were completed before a crash, or dead-lettered or expired at the source."""
        stale = [seq for seq, since in self.completing.items() if since < expected_by]
        if stale:
            for seq in stale:
                del self.completing[seq]
            self.spool.save_completing(self.completing)
        return stale


def _text(lines: Iterable[str]) -> str:
    return "".join(f"{line}\n" for line in lines)
