"""Every benchmark runs end to end with tiny numbers and ends with its figures as one JSON line, the
counts it reads back complete. Timings are not checked (a shared machine makes them noise): these runs
only keep the benchmarks working (bench.replication's own smoke run is in test_replication_bench.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.full(why="each benchmark starts its own emulators or Spark: minutes in all"),
    pytest.mark.timeout(900),
]


def summary(module: str, *arguments: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", module, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=840
    )
    assert run.returncode == 0, run.stderr[-3000:]
    last: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return last


@pytest.mark.jvm
def test_the_service_bus_benchmark_reads_back_every_message_in_each_scenario() -> None:
    result = summary(
        "bench.servicebus", "--messages", "200", "--duration", "4", "--warmup", "2", "--rate", "50"
    )
    assert result["messages"] == 200 and result["scenarios"]
    assert result["counts_match"] is True


@pytest.mark.jvm
def test_the_soak_benchmark_compares_its_last_batches_with_its_first() -> None:
    result = summary("bench.soak", "--batches", "40", "--rate", "50")
    assert result["batches"] == 40
    assert result["last_over_first_p50"] > 0
    assert len(result["files_each_tenth"]) >= 2


@pytest.mark.jvm
def test_the_spark_floor_benchmark_times_a_batch_in_every_configuration() -> None:
    result = summary("bench.spark_floor", "--seconds", "6", "--rate", "100")
    assert result["batch_ms"] and all(result["batch_ms"].values())


def test_the_emulator_benchmark_reports_its_rates_and_memory() -> None:
    result = summary(
        "bench.emulator",
        "--events",
        "2000",
        "--receive",
        "1000",
        "--sb-messages",
        "100",
        "--topic-messages",
        "100",
    )
    assert result["events_held"] == 2000
    assert all(
        result[key] > 0 for key in ("eh_send_events_per_s", "eh_receive_events_per_s", "emulator_rss_mb_idle")
    )


def test_the_operator_scale_benchmark_gets_every_task_ready() -> None:
    result = summary("bench.operator_scale", "--tasks", "20", "--observe-interval", "5")
    (run,) = result["runs"]
    assert run["ready_tasks"] == 20


def test_the_translation_benchmark_times_each_phase_against_the_sdks_own_round() -> None:
    result = summary("bench.translation", "--partitions", "4", "--events", "50", "--groups", "2")
    assert result["copies"] == 200
    assert result["ratio_to_sdk_round"] and all(r > 0 for r in result["ratio_to_sdk_round"].values())


def test_the_like_matching_benchmark_compares_every_pattern_with_the_old_regex() -> None:
    result = summary("bench.like_matching", "--repeats", "1", "--old-chars", "50")
    assert result["text_bytes"]["large"] == 1 << 20
    assert result["patterns"] and all(figures["old"]["chars"] for figures in result["patterns"].values())
