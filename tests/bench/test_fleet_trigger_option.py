"""bench.fleet's ``--trigger-seconds`` (every task's trigger interval, to compare the quiet tasks' lag
with fewer, larger batches) refuses a negative interval before anything starts, naming the option."""

from __future__ import annotations

import subprocess
import sys


def test_a_negative_trigger_interval_is_refused_by_name() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.fleet", "--trigger-seconds", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert run.returncode == 2
    assert "--trigger-seconds: 0 or more, got -1" in run.stderr
