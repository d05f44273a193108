"""Files one process writes and another reads (task configs, status files, spools, commit records, state
snapshots, ready files): always replaced whole, so a reader never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, text: str, *, durable: bool = False) -> None:
    """Write a temporary sibling, then rename it over ``path``. The temporary name is unique and starts
    with a dot (readers that list a directory skip it), so two writers of one path never mix their bytes.
    ``durable`` also fsyncs the file and its directory: after a crash, power loss included, the path holds
    the old content or the new, whole. Without it only a process crash is covered."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(".tmp", f".{path.name}.", path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if durable:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
