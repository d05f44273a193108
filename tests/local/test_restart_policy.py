"""Local mode restarts an application that ended by itself, as a cluster's restart policy would: after a
pause that doubles with each failure in a row (reset once it ran healthily), its row saying why and when;
an application stopped on request is not restarted."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator import reasons
from federator.local import session as session_module
from federator.local.apps import SparkApp, crash_restart_delay
from federator.local.model import TaskRun
from federator.local.observe import LogWatch
from federator.local.plan import plan_local_run
from federator.local.session import LocalSession
from federator.local.state import StateDir
from federator.local.supervisor import spawn
from federator.validation.documents import Document
from federator_contract.applog import started_marker

TASK = """
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {name: t}
spec:
  source: {eventHub: {connection: {emulator: {namespace: a}}, eventHubName: orders}}
  targets:
    - {name: copy, eventHub: {connection: {emulator: {namespace: b}}, eventHubName: orders}}
"""


def test_the_pause_doubles_from_ten_seconds_up_to_five_minutes() -> None:
    assert [crash_restart_delay(n) for n in (1, 2, 3, 4, 5, 6, 7)] == [10, 20, 40, 80, 160, 300, 300]


FAILS = "raise SystemExit(3)"
RUNS = "import time; time.sleep(60)"


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> LocalSession:
    """A session whose 'application' is a Python process (that fails at once, unless the test is marked
    with the code to run), and short pauses."""
    code = getattr(request, "param", FAILS)
    state = StateDir(tmp_path / "state")
    documents = [Document("t.yaml", 0, yaml.safe_load(TASK))]
    plan = plan_local_run(documents, state=state, environ={})

    def launch(tasks: Sequence[TaskRun], state: StateDir, environ: Any, ready: Any) -> SparkApp:
        log_path = state.app_log("default", "t")
        process = spawn("t", [sys.executable, "-c", code], os.environ, log_path)
        logs = {t.key: LogWatch(log_path, started_marker("default", "t")) for t in tasks}
        return SparkApp("t", process, list(tasks), logs)

    monkeypatch.setattr(session_module, "launch", launch)
    monkeypatch.setattr(session_module, "crash_restart_delay", lambda failures: 0.2 * failures)
    local = LocalSession(plan, state, {})
    local.pending = list(plan.tasks)
    return local


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_an_application_that_ends_by_itself_is_started_again_and_counts_its_failures(session) -> None:
    session.reconcile()
    first = session.apps[0]

    wait_until(lambda: first.process.exit_code() is not None, "the first attempt did not end")
    session.reconcile()  # schedules the restart
    row = next(r for r in session.rows() if r.key == "default/t")
    assert (row.condition, row.reason) == ("Reconciling", reasons.SPARK_APPLICATION_RESTARTING)
    assert "the app exited with code 3" in row.message and "(failure 1 in a row)" in row.message
    assert session.running() and session.failed  # waiting to start again, after a failure

    def restarted() -> bool:
        session.reconcile()
        return session.apps[0] is not first

    wait_until(restarted, "the application was not started again")
    second = session.apps[0]
    wait_until(lambda: second.process.exit_code() is not None, "the second attempt did not end")
    session.reconcile()
    assert second.failures == 2


@pytest.mark.parametrize("session", [RUNS], indirect=True)
def test_an_application_stopped_on_request_is_not_started_again(session) -> None:
    session.reconcile()
    session.stop()

    session.reconcile()
    assert session.apps[0].restart_at is None and not session.running()
