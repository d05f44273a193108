"""Running the `federator` CLI as a user does, for the end-to-end tests: in its own session, with its
output in a log file, stopped with SIGINT; and the process tree, to prove nothing of a run is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from support.polling import eventually

FEDERATOR = Path(sys.executable).parent / "federator"
SPARK_START = 240  # a Spark JVM on a busy 2-core machine


# Not passed on: secrets, and a terminal's size. Writing to a file, the CLI picks its own width, which the
# tests read lines at; pytest-xdist's workers have COLUMNS=80, which wrapped them.
WITHHELD = ("FEDERATOR_SECRET_", "COLUMNS", "LINES")


def federator(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [str(FEDERATOR), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so that a failing test can still kill everything
            env={k: v for k, v in os.environ.items() if not k.startswith(WITHHELD)},
        )


def process_tree(root: int) -> dict[int, tuple[str, str]]:
    """Every descendant of ``root``: pid → (start time, so that a reused pid is not mistaken for it;
    command line)."""
    parents: dict[int, list[int]] = {}
    seen: dict[int, tuple[str, str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_text().replace("\0", " ")
            except (FileNotFoundError, ProcessLookupError):
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
            seen[int(entry.name)] = (fields[19], command)
    found: dict[int, tuple[str, str]] = {}
    stack = [root]
    while stack:
        for child in parents.get(stack.pop(), []):
            found[child] = seen[child]
            stack.append(child)
    return found


def survivors(tree: dict[int, tuple[str, str]]) -> list[str]:
    left = []
    for pid, (start, command) in tree.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        if fields[19] == start and fields[0] != "Z":
            left.append(command[:120])
    return left


def commands(tree: dict[int, tuple[str, str]]) -> str:
    return " ".join(command for _, command in tree.values())


def stop(run: subprocess.Popen[bytes], log: Path) -> tuple[int, dict[int, tuple[str, str]]]:
    """SIGINT, as Ctrl-C would; returns the exit code and the process tree just before."""
    tree = process_tree(run.pid)
    run.send_signal(signal.SIGINT)
    try:
        return run.wait(timeout=90), tree
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        raise AssertionError(f"the run did not stop on SIGINT:\n{log.read_text()[-3000:]}") from None


def wait_for(text: str, log: Path, run: subprocess.Popen[bytes], timeout: float = SPARK_START) -> None:
    def seen() -> bool:
        assert run.poll() is None, log.read_text()[-3000:]
        return text in log.read_text()

    eventually(seen, timeout, f"{text!r} not in the output:\n{log.read_text()[-3000:]}")
