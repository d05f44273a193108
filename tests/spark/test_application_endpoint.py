"""The status endpoints of a driver that runs several tasks: one server per metrics port, shared by the
tasks whose configs name that port (in a cluster all of them: the application's port), serving every
task's series at `/metrics`, each task's status document at `/tasks/<ns>/<task>/status` and the list of
tasks with their state at `/status`. No JVM: the host's endpoints are fed what its passes publish."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from federator_contract.driverstatus import task_status_path
from federator_contract.taskconfig import TaskConfig
from federator_spark.host import Endpoints, Task, entry
from federator_spark.status_server import InvalidConfig


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


def document(port: int, path: str) -> Any:
    status, body = get(port, path)
    assert status == 200, body
    return json.loads(body)


def task(tmp_path: Path, name: str, port: int | None, events_out: int = 0) -> Task:
    endpoint = {"connection": {"emulator": {"namespace": "a"}}}
    config = TaskConfig.from_raw(
        {
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {
                "source": {"eventHub": {**endpoint, "eventHubName": name}},
                "targets": [{"name": "copy", "eventHub": {**endpoint, "eventHubName": f"{name}-copy"}}],
                "runtime": {"triggerIntervalSeconds": 1},
            },
            "checkpointLocation": f"file://{tmp_path}/{name}",
            "metricsPort": port,
        }
    )
    status_file = tmp_path / f"{name}-status.json"
    status_file.write_text(json.dumps({"targets": {"copy": {"eventsOut": events_out, "deadLettered": 0}}}))
    return Task(config, query=object(), status_file=str(status_file))


@pytest.fixture
def endpoints() -> Iterator[Endpoints]:
    found = Endpoints()
    yield found
    found.close()


def publish(endpoints: Endpoints, tasks: dict[str, Task], invalid: tuple[InvalidConfig, ...] = ()) -> None:
    endpoints.publish(tasks, {key: entry(t) for key, t in tasks.items()}, list(invalid))


def test_tasks_that_share_a_port_share_its_server_and_each_has_its_series_and_status(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    shared, own = free_port(), free_port()
    tasks = {
        "shop/a": task(tmp_path, "a", shared, events_out=3),
        "shop/b": task(tmp_path, "b", shared, events_out=5),
        "shop/c": task(tmp_path, "c", own, events_out=7),
    }

    publish(endpoints, tasks)

    assert sorted(endpoints.servers) == sorted([shared, own])
    metrics = get(shared, "/metrics")[1]
    assert 'federator_events_replicated_total{namespace="shop",target="copy",task="a"} 3.0' in metrics
    assert 'federator_events_replicated_total{namespace="shop",target="copy",task="b"} 5.0' in metrics
    assert 'task="c"' not in metrics
    assert metrics.count("# TYPE federator_events_replicated_total counter") == 1  # one family, two tasks
    assert document(shared, task_status_path("shop", "b"))["targets"]["copy"]["eventsOut"] == 5
    assert document(shared, "/status")["tasks"] == [
        {"namespace": "shop", "name": "a", "state": "Running", "reason": "Running"},
        {"namespace": "shop", "name": "b", "state": "Running", "reason": "Running"},
    ]
    assert get(shared, task_status_path("shop", "c"))[0] == 404  # served on its own port
    assert document(own, task_status_path("shop", "c"))["targets"]["copy"]["eventsOut"] == 7


def test_a_task_removed_disappears_and_a_port_whose_last_task_went_is_freed(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    shared, own = free_port(), free_port()
    tasks = {"shop/a": task(tmp_path, "a", shared), "shop/b": task(tmp_path, "b", shared)}
    tasks["shop/c"] = task(tmp_path, "c", own)
    publish(endpoints, tasks)
    server = endpoints.servers[shared]

    del tasks["shop/a"], tasks["shop/c"]
    publish(endpoints, tasks)

    assert endpoints.servers == {shared: server}  # the same server: b was never interrupted
    assert [t["name"] for t in document(shared, "/status")["tasks"]] == ["b"]
    assert get(shared, task_status_path("shop", "a"))[0] == 404
    assert 'task="a"' not in get(shared, "/metrics")[1]
    with pytest.raises(urllib.error.URLError, match="Connection refused"):
        get(own, "/metrics")


def test_the_applications_port_serves_every_task_and_lists_the_configs_it_cannot_run(tmp_path: Path) -> None:
    port = free_port()
    endpoints = Endpoints(port)
    try:
        publish(endpoints, {})  # before any task runs: what it cannot run is visible already
        broken = InvalidConfig(
            "ConfigMap shop/a-task", "InvalidSpec", "ConfigMap shop/a-task: key task.json: …"
        )
        failing = task(tmp_path, "b", None)
        failing.query, failing.error = None, "SourceNotFound: event hub 'b' does not exist"
        publish(endpoints, {"shop/b": failing}, (broken,))
        listing = document(port, "/status")
    finally:
        endpoints.close()

    assert listing == {
        "tasks": [
            {
                "namespace": "shop",
                "name": "b",
                "state": "Failed",
                "reason": "QueryFailed",
                "message": "SourceNotFound: event hub 'b' does not exist",
            }
        ],
        "invalidConfigs": [
            {
                "source": "ConfigMap shop/a-task",
                "reason": "InvalidSpec",
                "message": "ConfigMap shop/a-task: key task.json: …",
            }
        ],
    }


def test_a_task_waiting_for_its_turn_is_listed_as_starting(tmp_path: Path) -> None:
    waiting = task(tmp_path, "a", None)
    waiting.query = None

    assert (entry(waiting).state, entry(waiting).reason) == ("Starting", "Starting")
