"""The fleet benchmark runs end to end with tiny numbers: one application grown from one task to two, a
backlog caught up beside a quiet task with no bound on a member's batches and with a bound of 100 events,
one application of its own per task, and ``federator run`` of two tasks sharing an application; its
summary line has every figure, and every target read back holds what its source was sent, once. Timings
are not checked (a shared CI machine makes them noise)."""

from __future__ import annotations

import pytest
from test_bench_smoke import summary

pytestmark = [
    pytest.mark.jvm,
    pytest.mark.full(why="the benchmarks' smoke runs: two Spark applications, one after the other"),
    pytest.mark.timeout(900),
]

ARGUMENTS = ["--tasks", "1,2", "--separate", "1", "--backlog", "300", "--backlog-tasks", "2", "--local", "2"]
BOUNDS = ["--member-events", "0,100"]
SHORT = ["--settle", "1", "--idle", "3", "--warmup", "2", "--window", "5"]


def test_a_tiny_fleet_replicates_every_event_once_and_reports_every_figure() -> None:
    result = summary("bench.fleet", *ARGUMENTS, *BOUNDS, *SHORT)

    shared, separate, reads = result["shared"], result["separate"], result["read_back"]
    assert set(shared["sizes"]) == {"1", "2"}
    for figures in (*shared["sizes"].values(), separate["idle"]):
        assert figures["pss_mb"] > 0 and figures["processes"] >= 2  # a JVM and its Python driver at least
    assert set(shared["per_added_task"]) == {"2"}
    assert shared["application_start_to_first_event_s"] > 0
    assert shared["added_task_first_event_s"]["count"] == 1  # the second task, added to a running app

    assert set(result["backlog"]) == {"0", "100"}
    for backlog in result["backlog"].values():
        assert (backlog["quiet_tasks"], backlog["events"]) == (1, 300)
        assert 0 < backlog["first_event_s"] <= backlog["catch_up_s"]
        assert backlog["quiet_tasks_warm_s"] >= 1.5  # the --warmup of 2 s, at least, before the baseline
        lags = backlog["quiet_lag_ms"]
        assert lags["baseline"]["count"] > 0 and lags["during_backlog"]["count"] > 0
        # One quiet task: its own p99 is all tasks', and the worst off is the only one.
        assert backlog["quiet_task_p99_ms"]["during_backlog"] == {"in-000": lags["during_backlog"]["p99"]}
        assert backlog["worst_quiet_task_p99_ms"]["during_backlog"] == lags["during_backlog"]["p99"]
    assert set(result["backlog_quiet_p99_first_bound_over_each"]) == {"100"}

    assert separate["applications"] == 1 and separate["start_to_first_event_s"]["count"] == 1
    # Two shared tasks, the two backlogs', the separate one: each read back whole, nothing twice.
    assert (reads["tasks"], reads["lost"], reads["duplicated"]) == (5, 0, 0)
    assert result["counts_match"] is True

    local = result["local_mode"]
    assert (
        local["tasks"] == 2
        and local["idle"]["pss_mb"] > 0
        and local["emulator_ready_to_every_first_event_s"] > 0
    )
    assert local["burst"]["events"] == 300
    assert local["read_back"]["quiet_lag_ms"]["during_backlog"]["count"] > 0
    assert (local["read_back"]["tasks"], local["counts_match"]) == (2, True)
    assert set(result["goals_met"]) == {
        "pss_mb_per_added_task_le_100",
        "cpu_percent_per_added_task_le_0.5",
        "quiet_p99_ms_during_backlog_le_1000",
        "added_task_first_event_s_le_5",
    }
