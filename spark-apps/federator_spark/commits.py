"""Per-batch commit records, written by the driver when a micro-batch's writes all succeeded.

``<checkpoint>/federator/commits/<batchId>.json`` holds the batch's counts and, in effectively-once
mode, each Event Hubs target's last sequence number per partition right after the batch. Spark
replays an unfinished batch with the same batchId and offsets, so:

* a record for the replayed batchId means every write already succeeded (the crash came between
  our commit and Spark's commit log): the tasks skip the batch;
* otherwise the tasks read each target from the positions in the newest earlier record (record
  ``-1`` is taken before the first batch) and skip events whose source identity is already there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from federator_contract.files import write_atomically

INITIAL = -1


class CommitLog:
    def __init__(self, state_dir: str) -> None:
        self.directory = Path(state_dir) / "commits"

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"{batch_id}.json"

    def exists(self, batch_id: int) -> bool:
        return self._path(batch_id).exists()

    def write(self, batch_id: int, record: dict[str, Any]) -> None:
        """Whole and durable, so a crash never leaves a half record that reads as committed."""
        write_atomically(
            self._path(batch_id), json.dumps({"batchId": batch_id, **record}, sort_keys=True), durable=True
        )

    def latest_before(self, batch_id: int) -> dict[str, Any] | None:
        """The newest record of a batch before ``batch_id`` (record -1 included)."""
        if not self.directory.exists():
            return None
        earlier = [int(path.stem) for path in self.directory.glob("*.json") if int(path.stem) < batch_id]
        if not earlier:
            return None
        record: dict[str, Any] = json.loads(self._path(max(earlier)).read_text())
        return record
