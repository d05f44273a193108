"""Runs ``tools/sdk_samples.py`` (``tools/run-sdk-samples``) as a user does and reads its JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER_TIMEOUT_SECONDS = 3300

RunSamples = Callable[..., list[dict[str, Any]]]


@pytest.fixture
def run_samples(tmp_path: Path) -> RunSamples:
    """``run_samples(*arguments)``: the runner's results. It must exit 0 (no sample failed), and every
    sample that did not run (or failed by its own bug) must say why."""

    def run(*arguments: str) -> list[dict[str, Any]]:
        report = tmp_path / "samples.json"
        command = [sys.executable, str(ROOT / "tools" / "sdk_samples.py"), "--report", str(report)]
        run = subprocess.run(
            [*command, *arguments],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=RUNNER_TIMEOUT_SECONDS,
        )
        assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
        results: list[dict[str, Any]] = json.loads(report.read_text())
        statuses = {result["status"] for result in results}
        assert statuses <= {"pass", "stopped", "defect", "not run"}, statuses
        assert all(result["detail"] for result in results if result["status"] in ("defect", "not run"))
        # "passed": ended by itself or ran until stopped, without an error.
        return [{**result, "passed": result["status"] in ("pass", "stopped")} for result in results]

    return run
