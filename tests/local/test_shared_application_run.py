"""`federator run` of examples/shared-application.yaml end to end: the two tasks naming one
ReplicationApplication run as two queries of one Spark application (one JVM, `federator_spark.host`)
started with the application's Spark settings, and each replicates its own event hub; then SIGINT, and
no process of the run may be left."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from azure.eventhub import EventData, EventHubProducerClient
from run_helpers import federator, process_tree, stop, survivors, wait_for

from support.polling import eventually

pytestmark = [
    pytest.mark.slow,
    pytest.mark.jvm,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc"),
]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "shared-application.yaml"
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"


def send(state: Path, hub: str, count: int) -> None:
    ready = json.loads((state / "emulator" / "ready.json").read_text())
    connection = ready["namespaces"]["primary"]["connectionString"]
    with EventHubProducerClient.from_connection_string(connection, eventhub_name=hub) as producer:
        batch = producer.create_batch()
        for i in range(count):
            batch.add(EventData(f"{hub} {i}"))
        producer.send_batch(batch)


def replicated(state: Path, task: str) -> int:
    status = state / "tasks" / "default" / task / "status.json"
    return int(json.loads(status.read_text())["targets"]["secondary"]["eventsOut"]) if status.exists() else 0


def members() -> tuple[dict[str, Any], dict[str, str]]:
    """The example's application, and its tasks' names → their source hubs."""
    applications, tasks = [], {}
    for body in yaml.safe_load_all(EXAMPLE.read_text()):
        if body["kind"] == "ReplicationApplication":
            applications.append(body)
        else:
            tasks[body["metadata"]["name"]] = body["spec"]["source"]["eventHub"]["eventHubName"]
    [application] = applications
    return application, tasks


def test_tasks_naming_one_application_replicate_as_queries_of_one_jvm(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "run.log"
    application, tasks = members()
    counts = {task: 5 + 2 * i for i, task in enumerate(tasks)}
    run = federator("run", "-f", str(EXAMPLE), "--state-dir", str(state), log=log)
    try:
        for task in tasks:
            wait_for(f"default/{task}: Ready (Running)", log, run)
        for task, hub in tasks.items():
            send(state, hub, counts[task])
        eventually(
            lambda: {task: replicated(state, task) for task in tasks} == counts,
            180,
            "the tasks did not replicate",
        )
        commands = [command for _, command in process_tree(run.pid).values()]
        code, tree = stop(run, log)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()

    [jvm] = [command for command in commands if SPARK_SUBMIT in command]
    spec = application["spec"]
    settings = {
        **spec.get("sparkConf", {}),
        "spark.scheduler.mode": spec.get("scheduling", {}).get("mode", "FAIR"),
    }
    assert all(f"{key}={value}" in jvm for key, value in settings.items()), jvm
    hosts = [
        command for command in commands if "federator_spark.host" in command and SPARK_SUBMIT not in command
    ]
    assert len(hosts) == 1, hosts
    app_log = (state / "applications" / "default" / application["metadata"]["name"] / "app.log").read_text()
    assert all(f"task default/{task} started (query " in app_log for task in tasks)
    assert code == 0, log.read_text()
    assert survivors(tree) == []
