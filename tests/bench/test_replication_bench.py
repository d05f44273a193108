"""The replication benchmark runs end to end with tiny numbers: its summary line has every figure and
both copies arrived complete. Timings are not checked (a shared CI machine makes them noise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_tiny_run_copies_every_event_once_both_ways_and_reports_every_figure() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.replication",
            "--events",
            "400",
            "--duration",
            "4",
            "--warmup",
            "2",
            "--rate",
            "50",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout.strip().splitlines()[-1])

    assert summary["events"] == 400
    assert summary["sdk_target_count"] == summary["spark_target_count"] == 400
    assert summary["counts_match"] is True
    for figure in ("sdk_events_per_s", "spark_events_per_s", "ratio", "sdk_seconds", "spark_seconds"):
        assert summary[figure] > 0, figure
    before, after = summary["sdk_runs_events_per_s"]  # the baseline brackets the Spark run
    assert before > 0 and after > 0
    latency = summary["latency"]
    assert latency["received"] == latency["sent"] > latency["measured_events"] > 0
    assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert summary["peak_rss_mb"]["jvm"] > 0 and summary["peak_rss_mb"]["python_workers"] > 0
    assert set(summary["cpu_s"]) == set(summary["emulator_cpu_s"]) == {"sdk", "spark"}
