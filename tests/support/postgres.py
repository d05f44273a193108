"""Pytest plugin: a throwaway PostgreSQL server from the Debian ``postgresql`` package's binaries.

Registered for the whole suite in tests/conftest.py. Fixtures:

* ``postgres_server`` (session) → :class:`PostgresServer`: ``initdb`` into a temporary directory,
  ``pg_ctl start`` on a free 127.0.0.1 port with its unix socket in that directory, password
  (SCRAM) authentication over TCP; stopped and removed when the session ends.
* ``postgres_uri`` → libpq URI (``postgresql://user:password@127.0.0.1:port/db``) of a fresh, empty
  database for one test, dropped afterwards.

The binaries come from ``/usr/lib/postgresql/<version>/bin`` (``tools/install-system-packages``
installs them; CI runs it) or, elsewhere, from ``PATH``. Missing binaries fail the tests that need
them: CI must never pass by skipping. ``initdb`` refuses to run as root, so under root the server
runs as the ``postgres`` system user the Debian package creates.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

__all__ = ["PostgresServer", "postgres_server", "postgres_uri"]

_DEBIAN_BIN_DIRS = "/usr/lib/postgresql"
_SUPERUSER = "federator"
_SYSTEM_USER = "postgres"  # created by Debian's postgresql-common
_START_TIMEOUT_SECONDS = 30
_PORT_ATTEMPTS = 5
# A test server: durability is worthless here, speed is not.
_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "50",
}


@dataclass(frozen=True)
class PostgresServer:
    bin_dir: Path
    base: Path  # holds the data directory, the unix socket and the log
    port: int
    user: str
    password: str

    def uri(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    @property
    def log(self) -> Path:
        return self.base / "server.log"


def find_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb and pg_ctl, else their dir on PATH."""
    versions = sorted(
        (p for p in Path(_DEBIAN_BIN_DIRS).glob("*/bin") if p.parent.name.isdigit()),
        key=lambda p: int(p.parent.name),
        reverse=True,
    )
    for candidate in versions:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).parent
    pytest.fail(
        f"PostgreSQL server binaries (initdb, pg_ctl) not found under {_DEBIAN_BIN_DIRS}/<version>/bin "
        "or on PATH: run tools/install-system-packages (Debian package postgresql)",
        pytrace=False,
    )


def _run_as() -> list[str]:
    """Command prefix that runs the server as a non-root user (initdb refuses root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(_SYSTEM_USER)
    except KeyError:
        pytest.fail(
            f"running as root, and initdb refuses root: create the system user {_SYSTEM_USER!r} "
            "(the Debian postgresql package does) or run the tests as a normal user",
            pytrace=False,
        )
    return ["runuser", "-u", _SYSTEM_USER, "--"]


def _free_port() -> int:
    """A port free a moment ago: PostgreSQL cannot bind port 0 (the port also names its unix socket) nor
    take a bound socket, so another process may take it first; `_start` then tries another."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=_START_TIMEOUT_SECONDS + 30)


def _check(result: subprocess.CompletedProcess[str], what: str, log: str = "") -> None:
    if result.returncode != 0:
        pytest.fail(
            f"{what} failed ({result.returncode}):\n{result.stdout}{result.stderr}{log}", pytrace=False
        )


def start_server() -> PostgresServer:
    bin_dir = find_bin_dir()
    prefix = _run_as()
    owner = pwd.getpwnam(_SYSTEM_USER) if prefix else None
    base = Path(tempfile.mkdtemp(prefix="federator-pg-"))
    password = secrets.token_hex(16)
    password_file = base / "password"
    password_file.write_text(password + "\n")
    if owner is not None:  # the server's user must own its directory and read the password file
        for path in (base, password_file):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    data = base / "data"
    initdb = _run(
        [
            *prefix,
            str(bin_dir / "initdb"),
            f"--pgdata={data}",
            f"--username={_SUPERUSER}",
            f"--pwfile={password_file}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]
    )
    _check(initdb, "initdb")
    password_file.unlink()
    for _ in range(_PORT_ATTEMPTS):
        server = PostgresServer(bin_dir, base, _free_port(), _SUPERUSER, password)
        if _start(server, prefix):
            return server
    pytest.fail(
        f"pg_ctl start: each of {_PORT_ATTEMPTS} ports was taken before the server bound it", pytrace=False
    )


def _start(server: PostgresServer, prefix: list[str]) -> bool:
    """Start on `server.port`; False when another process took that port first."""
    options = " ".join(
        [f"-p {server.port}", f"-k {server.base}", *(f"-c {key}={value}" for key, value in _SETTINGS.items())]
    )
    logged = server.log.stat().st_size if server.log.exists() else 0
    command = [
        *prefix,
        str(server.bin_dir / "pg_ctl"),
        f"--pgdata={server.base / 'data'}",
        f"--log={server.log}",
        "--wait",
        f"--timeout={_START_TIMEOUT_SECONDS}",
        f"--options={options}",
        "start",
    ]
    result = _run(command)
    this_start = server.log.read_text(errors="replace")[logged:] if server.log.exists() else ""
    if result.returncode != 0 and "Address already in use" in this_start:
        return False
    _check(result, "pg_ctl start", this_start[-3000:])
    return True


def stop_server(server: PostgresServer) -> None:
    # Immediate: nothing in a throwaway server is worth a checkpoint.
    subprocess.run(
        [
            *_run_as(),
            str(server.bin_dir / "pg_ctl"),
            f"--pgdata={server.base / 'data'}",
            "-m",
            "immediate",
            "stop",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    shutil.rmtree(server.base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = start_server()
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def postgres_uri(postgres_server: PostgresServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh empty database for this test (named after it), dropped when the test ends."""
    slug = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40]
    database = f"t_{slug}_{secrets.token_hex(3)}"
    with psycopg.connect(postgres_server.uri(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    try:
        yield postgres_server.uri(database)
    finally:
        with psycopg.connect(postgres_server.uri(), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(database)))
