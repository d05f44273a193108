"""Append-only journal that makes namespace state durable.

Each record is ``>III`` (meta length, payload length, crc32 of both) + JSON meta + payload.
Records are written as state changes and ``commit()`` is called by the protocol layer
before it acknowledges anything to a client, so an acknowledged message or settlement is
on disk. With ``fsync`` on, commit also fsyncs: a process kill never loses acknowledged
data even without it (the page cache survives), fsync additionally covers power loss.
Reading stops at the first torn or corrupt record, which a kill during a write leaves.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol

_HEADER = struct.Struct(">III")
logger = logging.getLogger(__name__)

Record = tuple[dict[str, Any], bytes]


class Journal(Protocol):
    def write(self, meta: dict[str, Any], payload: bytes = b"") -> None: ...

    def commit(self) -> None: ...

    def close(self) -> None: ...


class NullJournal:
    """In-memory mode: nothing is kept."""

    def write(self, meta: dict[str, Any], payload: bytes = b"") -> None:
        pass

    def commit(self) -> None:
        pass

    def close(self) -> None:
        pass


class FileJournal:
    def __init__(self, path: Path, fsync: bool) -> None:
        self.path = path
        self._fsync = fsync
        # Opened on the first write, so the file can be replayed (and a torn tail cut)
        # after the namespace state holding this journal was built.
        self._file: BinaryIO | None = None
        self._dirty = False

    def write(self, meta: dict[str, Any], payload: bytes = b"") -> None:
        if self._file is None:
            self._file = self.path.open("ab")
        encoded = json.dumps(meta, separators=(",", ":")).encode()
        crc = zlib.crc32(payload, zlib.crc32(encoded))
        self._file.write(_HEADER.pack(len(encoded), len(payload), crc) + encoded + payload)
        self._dirty = True

    def commit(self) -> None:
        if self._file is None or not self._dirty:
            return
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._dirty = False

    def close(self) -> None:
        if self._file is not None:
            self.commit()
            self._file.close()
            self._file = None


def read_journal(path: Path) -> Iterator[Record]:
    """Yield the intact records of a journal file, stopping at a torn tail."""
    if not path.exists():
        return
    with path.open("rb") as f:
        data = f.read()
    pos = 0
    while pos + _HEADER.size <= len(data):
        meta_len, payload_len, crc = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size
        end = start + meta_len + payload_len
        if end > len(data):
            break
        meta_bytes, payload = data[start : start + meta_len], data[start + meta_len : end]
        if zlib.crc32(payload, zlib.crc32(meta_bytes)) != crc:
            break
        yield json.loads(meta_bytes), payload
        pos = end
    if pos != len(data):
        logger.warning("journal %s: ignoring %d bytes of a torn final record", path, len(data) - pos)
        # Cut the torn tail so new records are not appended after garbage.
        with path.open("r+b") as f:
            f.truncate(pos)
