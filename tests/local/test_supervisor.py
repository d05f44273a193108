"""Process supervision with real processes: a child that ignores SIGTERM and leaves grandchildren behind is
still stopped with its whole group; what a runner killed outright left is stopped by the next run; state-dir
ports and the lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from federator.local.state import StateDir, StateDirBusy
from federator.local.supervisor import reap_leftovers, spawn, stop_all
from support.polling import eventually

# Starts two grandchildren that outlive it unless its group is killed, then ignores SIGTERM.
STUBBORN = """
import signal, subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
print(" ".join(str(k.pid) for k in kids), flush=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def grandchildren(log: Path) -> list[int]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        lines = [line for line in log.read_text().splitlines() if line and line[0].isdigit()]
        if lines:
            return [int(p) for p in lines[0].split()]
        time.sleep(0.05)
    raise AssertionError(log.read_text())


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_child_that_ignores_sigterm_is_killed_with_its_group_after_the_grace_period(tmp_path: Path) -> None:
    process = spawn("stubborn", [sys.executable, "-c", STUBBORN], os.environ, tmp_path / "log")
    kids = grandchildren(tmp_path / "log")
    assert all(alive(pid) for pid in kids)

    stop_all([process], grace_seconds=0.5)

    assert process.killed and process.returncode is not None
    assert not alive(process.pid)
    eventually(lambda: not any(alive(pid) for pid in kids), 5, "grandchildren survived")


# A runner that starts the stubborn child with its group recorded, says so, and waits to be killed.
RUNNER = """
import os, sys, time
from pathlib import Path
from federator.local.supervisor import spawn
argv, log, records = [sys.executable, "-c", sys.argv[1]], Path(sys.argv[2]), Path(sys.argv[3])
child = spawn("stubborn", argv, os.environ, log, records=records)
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_what_a_killed_runner_left_running_is_stopped_by_the_next_run(tmp_path: Path) -> None:
    records = tmp_path / "processes"
    argv = [sys.executable, "-c", RUNNER, STUBBORN, str(tmp_path / "log"), str(records)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as runner:
        assert runner.stdout is not None
        child = int(runner.stdout.readline())
        kids = grandchildren(tmp_path / "log")
        runner.kill()  # no chance to stop anything
    assert alive(child) and all(alive(pid) for pid in kids)

    assert reap_leftovers(records) == ["stubborn"]

    eventually(lambda: not any(alive(pid) for pid in [child, *kids]), 5, "the leftovers survived")
    assert list(records.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_record_whose_pid_now_names_another_process_is_left_alone(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        records = tmp_path / "processes"
        records.mkdir()
        (records / str(other.pid)).write_text("an app of a run long gone\n1")  # started at another time

        assert reap_leftovers(records) == []

        assert alive(other.pid) and list(records.iterdir()) == []
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_process_stopped_by_the_run_leaves_no_record(tmp_path: Path) -> None:
    records = tmp_path / "processes"
    process = spawn(
        "stubborn", [sys.executable, "-c", STUBBORN], os.environ, tmp_path / "log", records=records
    )
    assert [r.name for r in records.iterdir()] == [str(process.pid)]

    stop_all([process], grace_seconds=0.5)

    assert list(records.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_when_a_leader_exits_by_itself_what_is_left_of_its_group_goes_too(tmp_path: Path) -> None:
    leaves = STUBBORN.replace("signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)", "")
    process = spawn("leaves", [sys.executable, "-c", leaves], os.environ, tmp_path / "log")
    kids = grandchildren(tmp_path / "log")

    deadline = time.monotonic() + 20
    while process.exit_code() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    assert process.returncode == 0 and not process.stop_requested
    eventually(lambda: not any(alive(pid) for pid in kids), 5, "grandchildren survived")


def test_ports_are_kept_for_known_namespaces_and_left_to_the_emulator_for_new_ones(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    assert state.stable_ports(["a"]) == {"a": (0, 0)}  # the emulator binds free ones

    state.remember_ports(
        {"namespaces": {"a": {"amqpPort": 40001, "httpsEndpoint": "https://localhost:40002"}}}
    )

    assert StateDir(tmp_path).stable_ports(["a", "b"]) == {"a": (40001, 40002), "b": (0, 0)}


def test_one_run_at_a_time_per_state_dir(tmp_path: Path) -> None:
    with StateDir(tmp_path).lock(), pytest.raises(StateDirBusy, match="another `federator run` uses"):
        StateDir(tmp_path).lock()
    StateDir(tmp_path).lock().close()  # released with the first
