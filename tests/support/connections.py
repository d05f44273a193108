"""Emulator connection strings as the replication app reads them: one file per namespace (what local mode
writes), named by the task config's `emulatorConnectionFiles`."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def connection_files(
    directory: Path, emulator: Any, namespaces: tuple[str, ...] | list[str]
) -> dict[str, str]:
    """Write each namespace's connection string to ``directory/<namespace>``; namespace → path."""
    return write_connection_files(directory, {ns: emulator.connection_string(ns) for ns in namespaces})


def write_connection_files(directory: Path, connection_strings: dict[str, str]) -> dict[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for namespace, text in connection_strings.items():
        path = directory / namespace
        path.write_text(text, encoding="utf-8")
        files[namespace] = str(path)
    return files
