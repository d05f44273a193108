"""bench.fleet refuses, before anything starts and naming the option, a bound on a member's batches that
is neither a count of events nor ``default`` (or is given twice), and a local run of a single task (it
needs a quiet task beside the one that takes the burst)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--member-events", "0,lots"],
            "--member-events: comma-separated event counts (0: no bound) or 'default', got 'lots'",
        ),
        (["--member-events", "0,0"], "--member-events: each bound once, got '0,0'"),
        (["--local", "1"], "--local: 0 (none), or 2 or more (quiet tasks and the burst's), got 1"),
    ],
)
def test_a_bad_option_is_refused_by_name(arguments: list[str], message: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.fleet", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert run.returncode == 2
    assert message in run.stderr
