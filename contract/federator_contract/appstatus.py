"""The replication app's status as local mode and the app's metrics endpoint read it, defined once here.

Two parts, each with one kind of writer, so no write ever undoes another:

* ``status.json``: counts, lag and the last batch, rewritten whole by the driver after every batch.
* ``status.outages/<role>-<endpoint>.json`` beside it: one file per source or target the app cannot reach
  right now (``SourceUnavailable``/``TargetUnavailable`` with the broker's words), or that refused it
  (``SourceAuthRefused``, ``TargetNotFound``…, which stop the query). Whichever process met the outage
  (the driver's source, an executor's write task) writes it at every attempt and removes it once the
  endpoint answers again; a file not refreshed for ``STALE_SECONDS`` was left by a process that ended.

:func:`read_status` merges both: ``unavailable`` lists the current outages, and while there is one the
lag is reported as the time since the last replicated event was enqueued, so it grows.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from federator_contract.files import write_atomically

Role = Literal["source", "target"]

SOURCE_UNAVAILABLE = "SourceUnavailable"
TARGET_UNAVAILABLE = "TargetUnavailable"
UNAVAILABLE = {"source": SOURCE_UNAVAILABLE, "target": TARGET_UNAVAILABLE}
# Configuration errors: retrying cannot help, the query stops.
REFUSED = {
    ("source", "auth"): "SourceAuthRefused",
    ("source", "notFound"): "SourceNotFound",
    ("target", "auth"): "TargetAuthRefused",
    ("target", "notFound"): "TargetNotFound",
    # The checkpoint holds positions of another source (a Secret re-pointed elsewhere): applied to this one
    # they would skip or repeat events, so the app reads nothing until positions are reset.
    ("source", "checkpointMismatch"): "CheckpointSourceMismatch",
}
CHECKPOINT_SOURCE_MISMATCH = REFUSED["source", "checkpointMismatch"]
STALE_SECONDS = 300.0
"""Writers refresh their file at every attempt (at most every 30 s of backoff plus the SDK's own retries)."""


def outages_dir(status_file: str | Path) -> Path:
    path = Path(status_file)
    return path.parent / f"{path.stem}.outages"


def _outage_path(status_file: str | Path, role: Role, endpoint: str) -> Path:
    return outages_dir(status_file) / f"{role}-{endpoint}.json"


def report_outage(
    status_file: str | Path, role: Role, endpoint: str, reason: str, message: str, *, now: float | None = None
) -> None:
    """Say that ``endpoint`` is unavailable (or refused us), keeping when the outage began."""
    now = time.time() if now is None else now
    path = _outage_path(status_file, role, endpoint)
    since = now
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
        if earlier.get("reason") == reason:
            since = float(earlier["since"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    record = {"role": role, "endpoint": endpoint, "reason": reason, "message": message, "since": since}
    write_atomically(path, json.dumps({**record, "updated": now}, sort_keys=True))


def clear_outage(status_file: str | Path, role: Role, endpoint: str) -> None:
    _outage_path(status_file, role, endpoint).unlink(missing_ok=True)


def current_outages(status_file: str | Path, *, now: float | None = None) -> list[dict[str, Any]]:
    """The outages reported and refreshed within ``STALE_SECONDS``, oldest first."""
    now = time.time() if now is None else now
    directory = outages_dir(status_file)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.glob("*.json"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            fresh = now - float(record["updated"]) <= STALE_SECONDS
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being replaced, or not ours
        if fresh:
            found.append({k: v for k, v in record.items() if k != "updated"})
    return sorted(found, key=lambda r: (r["since"], r["role"], r["endpoint"]))


def read_status(status_file: str | Path, *, now: float | None = None) -> dict[str, Any]:
    """The app's status (empty before its first batch and outage), with ``unavailable``: the current
    outages."""
    now = time.time() if now is None else now
    try:
        status: dict[str, Any] = json.loads(Path(status_file).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        status = {}
    outages = current_outages(status_file, now=now)
    if outages:
        status["unavailable"] = outages
        last = status.get("lastEnqueuedEpoch")
        if last is not None:
            status["replicationLagSeconds"] = round(max(now - float(last), 0.0), 3)
    return status
