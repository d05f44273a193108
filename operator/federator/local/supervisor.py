"""Child processes of a local run: each in its own session (so a terminal's Ctrl-C reaches only the
runner, which stops them in order), output to a log file, stopped with SIGTERM, then SIGKILL for the
whole process group after a grace period. Nothing outlives the runner: when a leader exits, whatever is
left of its group (a Spark JVM, Python workers) is killed before the leader is reaped, so the group id
cannot have been reused. A runner killed outright (SIGKILL, a closed laptop's OOM) cannot stop them:
each group is recorded in the state directory while it runs, and the next run in that directory kills
what a dead runner left (`reap_leftovers`)."""

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
    record: Path | None = None
    """Where its group is recorded while it runs (see `reap_leftovers`)."""

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
        self._reap()
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
            self._reap()

    def _reap(self) -> None:
        _kill_group(self.pid)
        self.returncode = self.popen.wait()
        if self.record is not None:
            self.record.unlink(missing_ok=True)


def spawn(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    cwd: Path | None = None,
    *,
    records: Path | None = None,
) -> ManagedProcess:
    """Start `argv` in a session of its own; with `records`, its group is recorded there while it runs."""
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
    return ManagedProcess(name, popen, log_path, record=_recorded(records, popen.pid, name))


def reap_leftovers(records: Path) -> list[str]:
    """Kill the process groups a runner that died without stopping them left behind (call it holding the
    state directory's lock: no live runner then owns a record). Returns what was killed, by name. A
    recorded leader whose pid now belongs to another process (its start time differs) is left alone."""
    killed = []
    for record in sorted(records.glob("*")) if records.is_dir() else []:
        name, _, started = record.read_text().partition("\n")
        pid = int(record.name)
        current = _start_time(pid)
        if current is None or current == started.strip():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
                killed.append(name or str(pid))
        record.unlink(missing_ok=True)
    return killed


def _recorded(records: Path | None, pid: int, name: str) -> Path | None:
    if records is None:
        return None
    records.mkdir(parents=True, exist_ok=True)
    record = records / str(pid)
    record.write_text(f"{name}\n{_start_time(pid) or ''}")
    return record


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None when no
    such process runs: with the pid, it names one process for good."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


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
