"""Replay-safe state of a stateful editor (chain, dedupe) for one source partition.

Snapshots live under the checkpoint's state dir, one JSON file per micro-batch:
``<checkpoint>/federator/editors/<index>-<kind>/<partition>/<batchId>.json``. The task of batch N
starts from the newest snapshot *before* N, never from N itself (a failed earlier attempt of N may
have written it), and saves N once all of its events were published. So a replayed batch, or a
retried task, recomputes exactly what the first attempt computed. Spark only ever replays the last
batch, so saving N removes the snapshots older than the one N started from.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

STATE_DIR = "editors"


class PartitionState:
    def __init__(self, state_dir: str | None, name: str, partition: str, batch_id: int) -> None:
        if state_dir is None:
            raise RuntimeError(f"editor {name} keeps state and needs a checkpoint location")
        self.directory = Path(state_dir) / STATE_DIR / name / partition
        self.batch_id = batch_id
        self._base: int | None = None

    def _batches(self) -> list[int]:
        if not self.directory.exists():
            return []
        return sorted(int(path.stem) for path in self.directory.glob("*.json"))

    def load(self) -> Any:
        """The state after the newest earlier batch, or None before the first one."""
        earlier = [batch for batch in self._batches() if batch < self.batch_id]
        if not earlier:
            return None
        self._base = earlier[-1]
        return json.loads((self.directory / f"{self._base}.json").read_text())

    def save(self, state: Any) -> None:
        """Atomic (write, fsync, rename): a crash never leaves a half snapshot."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # A unique temporary name: a speculative copy of the task may save the same batch at once.
        descriptor, temporary = tempfile.mkstemp(".tmp", f".{self.batch_id}.", self.directory)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(state, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.directory / f"{self.batch_id}.json")
        if self._base is not None:
            for batch in self._batches():
                if batch < self._base:
                    (self.directory / f"{batch}.json").unlink(missing_ok=True)
