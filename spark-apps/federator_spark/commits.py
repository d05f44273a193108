"""Per-batch commit records, written by the driver when a micro-batch's writes all succeeded.

``<checkpoint>/federator/commits/<batchId>.json`` holds the batch's counts and, for a task that follows a
FailoverGroup, what it handled (``following.py``). Spark replays an unfinished batch with the same batchId
and offsets, so a record for the replayed batchId means every write already succeeded (the crash came
between our commit and Spark's commit log): the tasks skip the batch, and the driver does not count it
again.

State stays bounded: each record names the oldest batch still needed after it (``retainFrom``), and
writing record N removes the records before that, so a task that runs for months keeps about as many
records as Spark keeps batches in its own logs (``spark.sql.streaming.minBatchesToRetain``, 100 by
default). Finding the record before batch N reads record N-1 directly (batch ids are consecutive); the
folder is listed only when that one is missing, at a query's first batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from federator_contract.files import write_atomically

RETAIN_FROM = "retainFrom"


class CommitLog:
    def __init__(self, state_dir: str) -> None:
        self.directory = Path(state_dir) / "commits"

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"{batch_id}.json"

    def exists(self, batch_id: int) -> bool:
        return self._path(batch_id).exists()

    def read(self, batch_id: int) -> dict[str, Any] | None:
        try:
            record: dict[str, Any] = json.loads(self._path(batch_id).read_text())
        except FileNotFoundError:
            return None
        return record

    def write(self, batch_id: int, record: dict[str, Any]) -> None:
        """Whole and durable, so a crash never leaves a half record that reads as committed."""
        write_atomically(
            self._path(batch_id), json.dumps({"batchId": batch_id, **record}, sort_keys=True), durable=True
        )

    def latest_before(self, batch_id: int) -> dict[str, Any] | None:
        """The newest record of a batch before ``batch_id``."""
        record = self.read(batch_id - 1)
        if record is not None:
            return record
        earlier = [batch for batch in self.batches() if batch < batch_id]
        return self.read(max(earlier)) if earlier else None

    def newest(self) -> dict[str, Any] | None:
        batches = self.batches()
        return self.read(max(batches)) if batches else None

    def batches(self) -> list[int]:
        """The batch ids with a record (a listing: for start-up and member switches, not per batch)."""
        if not self.directory.is_dir():
            return []
        return [int(path.stem) for path in self.directory.glob("*.json") if path.stem.lstrip("-").isdigit()]

    def prune(self, since: int, before: int) -> None:
        """Remove the records of batches ``since`` ≤ id < ``before`` (ids the records named: no listing)."""
        for batch_id in range(since, before):
            self._path(batch_id).unlink(missing_ok=True)

    def tidy(self, retain_batches: int) -> int:
        """At start-up: remove every record before the oldest one the newest record still needs (left by a
        crash between a record and its pruning, or kept by a version that never pruned: then the newest
        ``retain_batches`` stay). Returns how many went."""
        batches = self.batches()
        newest = self.read(max(batches)) if batches else None
        if newest is None:
            return 0
        oldest = newest.get(RETAIN_FROM, newest["batchId"] - retain_batches + 1)
        stale = [batch for batch in batches if batch < oldest]
        for batch_id in stale:
            self._path(batch_id).unlink(missing_ok=True)
        return len(stale)
