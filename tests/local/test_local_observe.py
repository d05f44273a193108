"""What the live view says about a task, from its process, its log and its status file; and how the
demo counts a target (loss, duplicates, order, lag)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from federator import reasons
from federator.local.observe import LogWatch, app_row, read_status
from federator.local.tally import Received, tally
from federator.local.traffic import SentEvent, event_id
from federator_contract import appstatus
from federator_contract.applog import failed_marker, started_marker

STATUS = {
    "targets": {"a": {"eventsOut": 7, "deadLettered": 1}, "b": {"eventsOut": 3, "deadLettered": 0}},
    "replicationLagSeconds": 1.5,
    "lastBatchTime": "2026-11-21T10:00:00Z",
}


def watch(tmp_path: Path, text: str = "") -> LogWatch:
    log = tmp_path / "app.log"
    log.write_text("old run: task default/t started (query 1)\n")  # an earlier run's lines do not count
    result = LogWatch(log, started_marker("default", "t"))
    with log.open("a") as f:
        f.write(text)
    result.poll()
    return result


def test_a_starting_app_is_reconciling(tmp_path: Path) -> None:
    row = app_row("default/t", exit_code=None, stop_requested=False, log=watch(tmp_path), status={})

    assert (row.condition, row.reason) == ("Reconciling", reasons.SPARK_APPLICATION_PENDING)
    assert row.replicated is None


def test_an_app_whose_query_runs_is_ready_with_the_status_files_figures(tmp_path: Path) -> None:
    log = watch(tmp_path, "INFO federator_spark.pipeline: task default/t started (query 42)\n")

    row = app_row("default/t", exit_code=None, stop_requested=False, log=log, status=STATUS)

    assert (row.condition, row.reason) == ("Ready", reasons.RUNNING)
    assert (row.replicated, row.dead_lettered, row.lag_seconds) == (10, 1, 1.5)
    assert row.last_batch == datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


def test_an_app_that_exits_by_itself_is_stalled_with_its_last_exception(tmp_path: Path) -> None:
    log = watch(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "replicate.py", line 1\n'
        "federator_spark.config.TaskConfigError: Service Bus sources are not supported yet\n"
        "26/11/21 INFO ShutdownHookManager: Shutdown hook called\n",
    )

    row = app_row("default/t", exit_code=1, stop_requested=False, log=log, status={})

    assert (row.condition, row.reason) == ("Stalled", reasons.SPARK_APPLICATION_FAILED)
    assert "exited with code 1: TaskConfigError: Service Bus sources are not supported yet" in row.message
    assert str(log.path) in row.message


def test_an_app_stopped_on_request_is_not_a_failure(tmp_path: Path) -> None:
    row = app_row("default/t", exit_code=-15, stop_requested=True, log=watch(tmp_path), status=STATUS)

    assert (row.condition, row.reason) == ("Reconciling", reasons.SPARK_APPLICATION_STOPPED)
    assert row.replicated == 10


def test_in_a_shared_application_a_failed_query_stalls_its_task_only(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    a, b = (LogWatch(log, started_marker("default", n), failed_marker("default", n)) for n in "ab")
    log.write_text(
        "INFO federator_spark.pipeline: task default/a started (query 1)\n"
        "INFO federator_spark.pipeline: task default/b started (query 2)\n"
        "ERROR federator.host: task default/a failed: TaskConfigError: no such queue\n"
    )
    a.poll()
    b.poll()

    failed = app_row("default/a", exit_code=None, stop_requested=False, log=a, status={})
    running = app_row("default/b", exit_code=None, stop_requested=False, log=b, status=STATUS)

    assert (failed.condition, failed.reason) == ("Stalled", reasons.SPARK_APPLICATION_FAILED)
    assert failed.message.startswith("its query failed: TaskConfigError: no such queue")
    assert (running.condition, running.reason) == ("Ready", reasons.RUNNING)


def test_in_a_shared_application_a_task_whose_query_started_again_is_not_stalled(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    task = LogWatch(log, started_marker("default", "a"), failed_marker("default", "a"))
    log.write_text(
        "INFO federator_spark.pipeline: task default/a started (query 1)\n"
        "ERROR federator.host: task default/a failed: EventHubError: no such hub\n"
        "INFO federator_spark.pipeline: task default/a started (query 2)\n"
    )
    task.poll()

    row = app_row("default/a", exit_code=None, stop_requested=False, log=task, status=STATUS)
    assert (row.condition, row.reason) == ("Ready", reasons.RUNNING)


def test_a_running_app_that_retries_a_target_says_so_with_the_brokers_words_and_a_growing_lag(
    tmp_path: Path,
) -> None:
    status_file = tmp_path / "status.json"
    status_file.write_text(json.dumps({**STATUS, "lastEnqueuedEpoch": time.time() - 80}))
    words = "ConnectError: Failed to initiate the connection due to exception: Connection refused"
    appstatus.report_outage(
        status_file, "target", "replica", "TargetUnavailable", words, now=time.time() - 42
    )
    log = watch(tmp_path, "INFO federator_spark.pipeline: task default/t started (query 42)\n")

    row = app_row("default/t", exit_code=None, stop_requested=False, log=log, status=read_status(status_file))

    assert (row.condition, row.reason) == ("Reconciling", reasons.TARGET_UNAVAILABLE)
    assert row.message == f"target replica for 42 s: {words}"
    assert row.lag_seconds is not None and row.lag_seconds >= 80  # since the last replicated event
    assert row.replicated == 10


def test_an_app_whose_target_refused_it_is_stalled_with_that_reason(tmp_path: Path) -> None:
    status_file = tmp_path / "status.json"
    words = "AuthenticationError: CBS Token authentication failed."
    appstatus.report_outage(status_file, "target", "replica", "TargetAuthRefused", words)
    log = watch(tmp_path, "EndpointRefusedError: TargetAuthRefused: sending to orders: target replica\n")

    row = app_row("default/t", exit_code=1, stop_requested=False, log=log, status=read_status(status_file))

    assert (row.condition, row.reason) == ("Stalled", reasons.TARGET_AUTH_REFUSED)
    assert row.message.startswith(f"target replica: {words}")


def test_an_outage_nobody_refreshed_for_minutes_is_forgotten(tmp_path: Path) -> None:
    status_file = tmp_path / "status.json"
    appstatus.report_outage(
        status_file, "source", "orders", "SourceUnavailable", "gone", now=time.time() - 3600
    )

    assert "unavailable" not in read_status(status_file)


def test_the_log_is_followed_across_partial_writes(tmp_path: Path) -> None:
    log = watch(tmp_path, "INFO task default/t sta")
    assert not log.started

    with log.path.open("a") as f:
        f.write("rted (query 9)\n")
    log.poll()

    assert log.started


def sent(*pairs: tuple[str, int], priority: str = "normal") -> dict[str, SentEvent]:
    return {event_id(k, s): SentEvent(k, s, 100.0 + s, priority) for k, s in pairs}


def received(key: str, seq: int, at: float) -> Received:
    return Received(event_id(key, seq), at)


def test_the_tally_counts_loss_duplicates_order_and_strangers() -> None:
    events = sent(("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1))
    at_target = [
        received("a", 0, 101.0),
        received("a", 2, 103.0),
        received("a", 1, 104.0),  # after a later event of its key
        received("a", 1, 105.0),  # a second copy
        received("b", 0, 100.5),
        Received(None, 100.0),  # not one of the demo's events
    ]

    result = tally(events, at_target, lambda e: True)

    assert (result.expected, result.replicated, result.lost) == (5, 4, 1)  # b-1 never arrived
    assert (result.duplicated, result.out_of_order, result.unexpected) == (1, 1, 1)
    assert (result.lag_p50_seconds, result.lag_p99_seconds) == (1.0, 3.0)  # lags 0.5, 1, 1, 3


def test_the_tally_of_a_routed_target_expects_only_what_matches() -> None:
    events = {**sent(("a", 0), priority="high"), **sent(("a", 1))}

    result = tally(events, [received("a", 0, 100.2), received("a", 1, 101.2)], lambda e: e.priority == "high")

    assert (result.expected, result.replicated, result.lost, result.unexpected) == (1, 1, 0, 1)


def test_the_lag_of_events_sent_while_the_app_warmed_up_is_reported_apart() -> None:
    events = sent(("a", 0), ("a", 1), ("a", 2), ("a", 3))  # sent at 100, 101, 102, 103
    at_target = [
        received("a", 0, 108.0),
        received("a", 1, 108.5),
        received("a", 2, 102.3),
        received("a", 3, 103.4),
    ]

    result = tally(events, at_target, lambda e: True, warm_from=102.0)

    assert (result.lag_p50_seconds, result.lag_p99_seconds) == (0.3, 0.4)  # once warm
    assert (result.startup_lag_p50_seconds, result.startup_lag_p99_seconds) == (7.5, 8.0)
    assert result.lost == 0
