"""A task of its own that follows a FailoverGroup runs in a host of its own (planning/follower.py): its
counts, lag and query state come from that host's document for it (`/tasks/<namespace>/<task>/status`,
served here by the host's real endpoint) and its `/status` listing, as a shared member's do; a switch
rewrites its ConfigMap, says so, and leaves its SparkApplication as it is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_following_wakeups import GROUPS, TASKS, follower_of_a_group, following_task
from test_replicationapplication_operator import APPS, MERGE, NS, condition, event_messages, get, set_state
from test_shared_driver_status import driver_pod

from federator.settings import OperatorSettings
from federator_emulator.testing import EmulatorFactory
from federator_spark.status_server import ApplicationServer, TaskEntry
from support.kube import KubeServer
from support.polling import eventually

pytestmark = pytest.mark.slow

TASK = f"{TASKS}/archive"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[ApplicationServer]:
    """The task's own host's endpoint: its one task runs and has replicated 42 events."""
    server = ApplicationServer(0)
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"targets": {"archive": {"eventsOut": 42}}}))
    server.publish({"archive": TaskEntry(NS, "archive", "Running", "Running", status_file=str(status))}, [])
    yield server
    server.close()


@pytest.fixture
def operator_settings(host: ApplicationServer) -> OperatorSettings:
    return OperatorSettings(observe_interval_seconds=1, retry_seconds=1, app_metrics_port=host.port)


def _status(kube: KubeServer) -> dict[str, Any]:
    return (get(kube, TASK) or {}).get("status") or {}


def test_a_following_task_reports_from_its_own_host_and_a_switch_leaves_its_application_alone(
    emulator_factory: EmulatorFactory, federator_operator: KubeServer
) -> None:
    kube = federator_operator
    follower_of_a_group(emulator_factory, kube, following_task("archive", "billing"))
    app = eventually(lambda: get(kube, f"{APPS}/archive"), timeout=30)
    assert app is not None
    driver_pod(kube, "archive-driver", app["spec"]["driver"]["labels"])  # as the SparkApplication says
    set_state(kube, "archive", {"state": "RUNNING"})

    status = eventually(lambda: (s := _status(kube)).get("eventsReplicated") and s)
    assert status["eventsReplicated"] == 42 and status["activeSourceMember"] == "weu"
    ready = eventually(lambda: (c := condition(get(kube, TASK), "Ready")).get("reason") == "Running" and c)
    assert ready["status"] == "True"
    assert ready["message"] == "the task's own host (Spark application archive) runs the task's query"

    kube.request("PATCH", f"{GROUPS}/billing", {"spec": {"activeMember": "neu"}}, MERGE)
    eventually(lambda: _status(kube).get("activeSourceMember") == "neu", timeout=30)
    [switched] = eventually(lambda: event_messages(kube, "FollowedMemberSwitched"), timeout=30)
    assert "billing/neu (was billing/weu)" in switched and "its query restarts in its own host" in switched
    assert event_messages(kube, "DriftCorrected") == [], "a switch is not drift"
    assert get(kube, f"{APPS}/archive")["spec"] == app["spec"]  # type: ignore[index]
