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
from pathlib import Path
from typing import Any

from federator_contract.files import write_atomically

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
        """Whole and durable: a crash never leaves a half snapshot (a speculative copy of the task may save
        the same batch at once: each writes its own temporary file)."""
        path = self.directory / f"{self.batch_id}.json"
        write_atomically(path, json.dumps(state, separators=(",", ":")), durable=True)
        if self._base is not None:
            for batch in self._batches():
                if batch < self._base:
                    (self.directory / f"{batch}.json").unlink(missing_ok=True)
