"""The Azure SDK for Python's published samples, unmodified, against the emulator (``tools/run-sdk-samples``,
docs/emulator.md): none fails; those that need something other than Event Hubs, Service Bus and Blob
Storage are listed as not run, with their reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.full(why="about a hundred samples, each a process of its own: 10+ minutes"),
    pytest.mark.timeout(3600),
]


def test_every_published_sample_runs_against_the_emulator_or_is_listed_with_its_reason(tmp_path) -> None:
    report = tmp_path / "samples.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "sdk_samples.py"), "--report", str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3300,
    )
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
    results = json.loads(report.read_text())
    statuses = {result["status"] for result in results}
    assert statuses <= {"pass", "stopped", "defect", "not run"}, statuses
    passed = [result for result in results if result["status"] in ("pass", "stopped")]
    assert len(passed) > len(results) / 2, "most samples run"
    assert all(result["detail"] for result in results if result["status"] in ("defect", "not run"))
