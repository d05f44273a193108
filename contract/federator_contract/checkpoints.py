"""Where a task may keep its checkpoint, and where Federator's own files go under it: what the CRD,
`federator validate` and the app agree on. No models here: the Service Bus source's Python process
reads it, and importing the models (pydantic) cost that process 0.5 s at every query start."""

from __future__ import annotations

from pathlib import Path

LOCAL_SCHEME = "file://"
# Under the checkpoint location, next to Spark's offsets/ and commits/: commit records, the Service Bus
# spool, editor state, status.
STATE_DIR = "federator"

# Why an object-store checkpoint is refused: by the CRD (a CEL rule), `federator validate` and the app.
LOCAL_CHECKPOINTS_ONLY = (
    "only file:// checkpoints are supported for now (commit records and Service Bus spool files need a "
    "path every Spark pod mounts): use persistentVolumeClaim with a ReadWriteMany claim, or a file:// "
    "path on such a mount"
)


def checkpoint_location_problem(location: str) -> str | None:
    """Why the app cannot keep its checkpoint at `location` (a URI or a path), or None."""
    if "://" not in location or location.startswith(LOCAL_SCHEME):
        return None
    return LOCAL_CHECKPOINTS_ONLY


def local_checkpoint_path(location: str) -> Path:
    """A checkpoint location as a local path; ValueError saying why when the app cannot keep files there."""
    problem = checkpoint_location_problem(location)
    if problem is not None:
        raise ValueError(f"checkpoint location: {problem}")
    return Path(location.removeprefix(LOCAL_SCHEME))
