"""A suite started with SIGINT ignored (the background of a non-interactive shell) starts its processes
with SIGINT's default, so a test can stop them as Ctrl-C would (support/sigint.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

STARTS_A_PROCESS = """
import subprocess, sys

def test_a_process_it_starts_would_stop_on_sigint():
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "True", "SIGINT is ignored in the processes a test starts"
"""


def in_the_background(pytester: pytest.Pytester, plugins: list[str]) -> subprocess.CompletedProcess[str]:
    """pytest as ``pytest &`` in a script runs it: bash starts a background job with SIGINT ignored."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(f"pytest_plugins = {plugins!r}")
    pytester.makepyfile(STARTS_A_PROCESS)
    script = '"$0" -m pytest -q -p no:cacheprovider "$1" & wait $!'
    return subprocess.run(
        ["bash", "-c", script, sys.executable, str(pytester.path)],
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_suite_started_in_the_background_starts_processes_sigint_stops(pytester: pytest.Pytester) -> None:
    run = in_the_background(pytester, ["support.sigint"])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_without_it_the_processes_would_ignore_sigint(pytester: pytest.Pytester) -> None:
    run = in_the_background(pytester, [])
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert "SIGINT is ignored in the processes a test starts" in run.stdout
