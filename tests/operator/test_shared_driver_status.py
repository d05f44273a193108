"""A member task's counts and lag come from its shared application's driver, which serves every member's
status document at its own path (`/tasks/<namespace>/<task>/status`, served here by the shared driver's
real endpoint): each member gets its own figures, never another member's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_replicationapplication_operator import (
    APPS,
    NS,
    RAPP,
    RT,
    application,
    condition,
    get,
    member,
    ready_reason,
    set_state,
)

from federator.settings import OperatorSettings
from federator_spark.status_server import ApplicationServer, TaskEntry
from support.kube import KubeServer
from support.orders import orders_secret, orders_service_account
from support.polling import eventually

PODS = f"/api/v1/namespaces/{NS}/pods"
LAG = {"measuredAt": "2026-11-26T12:00:00Z", "eventsBehind": 3, "secondsBehind": 1.5, "partitions": {}}


def _status_file(directory: Path, replicated: int, lag: dict[str, Any] | None = None) -> str:
    directory.mkdir()
    (directory / "status.json").write_text(json.dumps({"targets": {"neu": {"eventsOut": replicated}}}))
    if lag is not None:
        (directory / "lag.json").write_text(json.dumps(lag))
    return str(directory / "status.json")


@pytest.fixture
def shared_driver(tmp_path: Path) -> Iterator[ApplicationServer]:
    """The shared driver's endpoint: member `a` runs (with lag), `b`'s query failed and waits to start again,
    `c` is not started yet."""
    server = ApplicationServer(0)
    a = TaskEntry(NS, "a", "Running", "Running", status_file=_status_file(tmp_path / "a", 90, LAG))
    b = TaskEntry(
        NS,
        "b",
        "Failed",
        "QueryFailed",
        "target neu refused the credentials",
        _status_file(tmp_path / "b", 7),
    )
    server.publish({"a": a, "b": b}, [])
    yield server
    server.close()


@pytest.fixture
def operator_settings(shared_driver: ApplicationServer) -> OperatorSettings:
    return OperatorSettings(observe_interval_seconds=1, retry_seconds=1, app_metrics_port=shared_driver.port)


def driver_pod(kube: KubeServer, name: str, labels: dict[str, str]) -> None:
    """A running Spark driver pod ``name`` labelled ``labels`` (and `spark-role`, which Spark adds), at
    this machine's address, where the test serves the driver's endpoint."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {**labels, "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark"}]},
    }
    kube.request("POST", PODS, pod)
    running = {"status": {"phase": "Running", "podIP": "127.0.0.1"}}
    kube.request("PATCH", f"{PODS}/{name}/status", running, "application/merge-patch+json")


def test_each_member_reads_its_own_figures_and_query_state_from_the_shared_driver(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", f"/api/v1/namespaces/{NS}/secrets", orders_secret())
    kube.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, member("a"))
    kube.request("POST", RT, member("b"))
    kube.request("POST", RT, member("c"))
    eventually(lambda: get(kube, f"{APPS}/shared"))
    driver_pod(kube, "shared-driver", {"federator.io/application": "shared"})
    set_state(kube, "shared", {"state": "RUNNING"})

    a = eventually(lambda: (t := get(kube, f"{RT}/a")) and (t.get("status") or {}).get("lag") and t["status"])
    assert a["eventsReplicated"] == 90
    assert a["lag"]["eventsBehind"] == 3 and a["lag"]["secondsBehind"] == 1.5
    b = eventually(
        lambda: (t := get(kube, f"{RT}/b")) and "eventsReplicated" in (t.get("status") or {}) and t
    )
    assert b["status"]["eventsReplicated"] == 7
    assert "lag" not in b["status"], "b's status must not carry a's lag"

    # Whether each member's query runs is the driver's word, not the Spark application's alone.
    eventually(lambda: ready_reason(kube, f"{RT}/a") == "Running")
    eventually(lambda: ready_reason(kube, f"{RT}/b") == "QueryFailed")
    failed = condition(get(kube, f"{RT}/b"), "Reconciling")
    assert failed["status"] == "True" and "target neu refused the credentials" in failed["message"]
    eventually(lambda: ready_reason(kube, f"{RT}/c") == "QueryStarting")
    assert condition(get(kube, f"{RT}/c"), "SparkApplicationRunning")["status"] == "True"
    # The application waits for the members the driver does not run, each named with its reason.
    eventually(
        lambda: (
            "ReplicationTask b (QueryFailed)" in condition(get(kube, f"{RAPP}/shared"), "Ready")["message"]
        ),
        message="the application does not name the member whose query failed",
    )
    assert ready_reason(kube, f"{RAPP}/shared") == "MembersPending"
