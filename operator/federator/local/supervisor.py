"""Child processes of a local run: each in its own session (so a terminal's Ctrl-C reaches only the
runner, which stops them in order), output to a log file, stopped with SIGTERM, then SIGKILL for the
whole process group after a grace period. Nothing outlives the runner: when a leader exits, whatever is
left of its group (a Spark JVM, Python workers) is killed before the leader is reaped, so the group id
cannot have been reused."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

POLL_SECONDS = 0.1


@dataclass
class ManagedProcess:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    started_at: float = field(default_factory=time.monotonic)
    stop_requested: bool = False
    returncode: int | None = None
    killed: bool = False
    """True when it had to be killed after the grace period."""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exit_code(self) -> int | None:
        """None while it runs; once it has exited, its group is cleared and the code kept."""
        if self.returncode is not None:
            return self.returncode
        try:
            if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                return None
        except ChildProcessError:
            pass  # reaped elsewhere: wait() below returns at once
        _kill_group(self.pid)
        self.returncode = self.popen.wait()
        return self.returncode

    def terminate(self) -> None:
        """Ask the leader to stop (it stops its own children: Spark stops the query, then the JVM)."""
        if self.exit_code() is None:
            self.stop_requested = True
            self.popen.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.exit_code() is None:
            self.stop_requested = True
            self.killed = True
            _kill_group(self.pid)
            self.returncode = self.popen.wait()


def spawn(
    name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path | None = None
) -> ManagedProcess:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {name}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    return ManagedProcess(name, popen, log_path)


def stop_all(
    processes: Iterable[ManagedProcess], grace_seconds: float, hurry: threading.Event | None = None
) -> None:
    """SIGTERM every leader at once, wait up to ``grace_seconds`` for all (or until ``hurry`` is set: a
    second Ctrl-C), then kill the rest."""
    running = [p for p in processes if p.exit_code() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + grace_seconds
    while any(p.exit_code() is None for p in running) and time.monotonic() < deadline:
        if hurry is not None and hurry.wait(POLL_SECONDS):
            break
        if hurry is None:
            time.sleep(POLL_SECONDS)
    for process in running:
        process.kill()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, signal.SIGKILL)
