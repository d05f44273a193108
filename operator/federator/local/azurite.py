"""Azurite, Microsoft's Azure Storage emulator (npm package `azurite`), as a process of a local run.

Local mode starts its Blob service when a task's checkpoint translation names an emulator checkpoint
store (`checkpointStore: {emulator: {}}`); the test suite starts one per test that needs Blob storage.
`tools/install-azurite` installs the pinned version into `<repo>/.tools/azurite`. Azurite binds an
ephemeral loopback port and prints it; it keeps its blobs under ``location``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# Azurite's single account and its key: public, documented by Microsoft for the emulator
# ("Authorize with Shared Key credentials"), the same on every machine; it protects nothing.
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
BINARY_ENV = "FEDERATOR_AZURITE_BLOB"
_REPO_BINARY = (
    Path(__file__).resolve().parents[3] / ".tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
)
_LISTENING = re.compile(r"Blob service successfully listens on (https?://\S+)")
_START_TIMEOUT_SECONDS = 60.0
_STOP_GRACE_SECONDS = 3.0


class AzuriteNotFound(RuntimeError):
    """No `azurite-blob` binary: install it with tools/install-azurite."""


def blob_binary() -> Path:
    """`$FEDERATOR_AZURITE_BLOB`, else the repository's install (tools/install-azurite), else `PATH`."""
    configured = os.environ.get(BINARY_ENV)
    if configured:
        return Path(configured)
    if _REPO_BINARY.exists():
        return _REPO_BINARY
    found = shutil.which("azurite-blob")
    if found is None:
        raise AzuriteNotFound(
            "Azurite is not installed: run tools/install-azurite (or `npm install -g azurite`, or set "
            f"{BINARY_ENV} to an azurite-blob binary)"
        )
    return Path(found)


@dataclass
class RunningAzurite:
    """An Azurite Blob service; ``stop()`` ends it (its blobs stay in ``location``)."""

    process: subprocess.Popen[str]
    endpoint: str  # http://127.0.0.1:<port>
    location: Path
    output: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None  # drains the output until Azurite exits

    @property
    def blob_endpoint(self) -> str:
        return f"{self.endpoint}/{ACCOUNT}"

    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.blob_endpoint};"
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:  # Azurite closes its server at SIGTERM, which waits for clients' kept-alive connections
                self.process.wait(timeout=_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.reader is not None:
            self.reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_azurite(
    location: Path, *, host: str = "127.0.0.1", port: int = 0, https: tuple[Path, Path] | None = None
) -> RunningAzurite:
    """Start `azurite-blob` on ``host``:``port`` (0: an ephemeral port) and wait until it listens.

    With ``https`` (a certificate and its key, PEM files) it serves HTTPS and also accepts Microsoft Entra
    bearer tokens (Azurite's ``basic`` check: issuer, audience and lifetime, not the signature), which
    it takes over HTTPS only, as Azure does.
    """
    location.mkdir(parents=True, exist_ok=True)
    command = [
        str(blob_binary()),
        "--blobHost",
        host,
        "--blobPort",
        str(port),
        "--location",
        str(location),
        "--skipApiVersionCheck",  # the SDKs pin newer API versions than an emulator release may know
        "--loose",
        "--silent",
    ]
    if https is not None:
        command += ["--cert", str(https[0]), "--key", str(https[1]), "--oauth", "basic"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    output: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:  # reads until Azurite exits, so its pipe never fills
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip())
            del output[:-50]
            match = _LISTENING.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, name="azurite-output", daemon=True)
    reader.start()
    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    ready.wait(_START_TIMEOUT_SECONDS)
    if not found:
        running = RunningAzurite(process, "", location, output, reader)
        running.stop()
        why = "exited" if process.poll() is not None and time.monotonic() < deadline else "did not listen"
        raise RuntimeError(f"Azurite {why}: {' | '.join(output[-5:])}")
    return RunningAzurite(process, found[0].rstrip("/"), location, output, reader)
