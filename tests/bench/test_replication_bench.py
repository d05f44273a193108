"""The replication benchmark runs end to end with tiny numbers: its summary line has every figure, for
both delivery modes, and every copy arrived complete. Timings are not checked (a shared CI machine makes
them noise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.jvm,
    pytest.mark.full(why="the benchmarks' smoke runs: two minutes of Spark in both delivery modes"),
    pytest.mark.timeout(600),
]


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

    modes = {"at_least_once", "effectively_once"}
    assert summary["events"] == 400
    assert summary["sdk_target_count"] == 400
    assert summary["spark_target_count"] == dict.fromkeys(modes, 400)
    assert summary["counts_match"] is True
    assert summary["sdk_events_per_s"] > 0 and summary["sdk_seconds"] > 0
    for figure in ("spark_events_per_s", "ratio", "spark_seconds", "spark_outside_batches_s"):
        assert set(summary[figure]) == modes and all(v > 0 for v in summary[figure].values()), figure
    assert summary["effectively_once_over_at_least_once"] > 0
    assert summary["spark_session_start_s"] > 0
    for mode in modes:  # a run's time outside its batches: its query's start and stop, part of the run
        assert summary["spark_outside_batches_s"][mode] < summary["spark_seconds"][mode], mode
    before, after = summary["sdk_runs_events_per_s"]  # the baseline brackets the Spark runs
    assert before > 0 and after > 0
    assert set(summary["latency"]) == modes
    for mode, latency in summary["latency"].items():
        assert latency["received"] == latency["sent"] > latency["measured_events"] > 0, mode
        assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"], mode
        assert latency["batch_ms_p50"]["triggerExecution"] > 0, mode  # where a batch's time goes
        assert latency["federator_ms_per_batch"]["batches"] > 0, mode
    assert "intent" in summary["latency"]["effectively_once"]["federator_ms_per_batch"]
    assert "intent" not in summary["latency"]["at_least_once"]["federator_ms_per_batch"]
    assert summary["peak_rss_mb"]["jvm"] > 0 and summary["peak_rss_mb"]["python_workers"] > 0
    assert set(summary["cpu_us_per_event"]) == set(summary["emulator_cpu_us_per_event"]) == {"sdk", *modes}
    assert set(summary["load_average"]) == {"start", "throughput", "latency"}
