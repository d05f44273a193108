"""A task of its own that follows a FailoverGroup, end to end in the cheapest real form: its Spark
application as the operator renders it (planning/follower.py) is a host (`federator_spark.host`, its
own JVM here) watching, through the suite's API server, the task ConfigMap the operator renders; the group
switches, the operator's new ConfigMap arrives, and the task's query moves to the new member while the
host and its JVM go on (same processes, no new Spark application), where a task with a mounted config
restarted its whole Spark application. Real emulator namespaces for the members and the target, read back
with the real SDK.

Between the rendering and the run, only what a pod gives the driver: the host's arguments are the
rendered SparkApplication's (plus `--master`, which spark-submit sets), its Spark settings the rendered
ones without the cluster's (RPC secret, Kubernetes), the Secrets' values in the environment variables the
rendered pod template names, the checkpoint where the pod mounts its claim, and the API server in the
place of the cluster's (the host's in-cluster configuration, which reads a pod's ServiceAccount files)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kube_configmaps import CONFIGMAPS, cuttable_api
from spark_helpers import send, session_members, start_driver
from test_fleet_queries import delivered, free_port, wait_until
from test_shared_driver import fetch

from federator.planning.follower import plan_task
from federator.planning.following import resolve_following
from federator.planning.launchers import render_spark_application
from federator.planning.task import TASK_CONFIG_KEY, TaskPlan
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.driverstatus import task_status_path
from support.kube import KubeServer

pytestmark = [pytest.mark.slow, pytest.mark.jvm]

MEMBERS = ("weu", "neu")
HUBS = {
    "namespaces": [
        *({"name": m, "eventHubs": [{"name": "orders", "partitionCount": 1}]} for m in MEMBERS),
        {"name": "dr", "eventHubs": [{"name": "copy", "partitionCount": 1}]},
    ]
}
SPEC = {
    "source": {
        "eventHub": {
            "connection": {"failoverGroupRef": {"name": "orders", "resumeSkewSeconds": 5}},
            "eventHubName": "orders",
        }
    },
    "targets": [
        {"name": "copy", "eventHub": {"connection": {"secretRef": {"name": "dr"}}, "eventHubName": "copy"}}
    ],
}
# The host as a pod runs it, but reaching the suite's API server: plain HTTP, no ServiceAccount files.
IN_TEST_CLUSTER = """
import sys
from federator_spark import host
from federator_spark.kube_client import ApiAccess

url = sys.argv.pop(1)
ApiAccess.in_cluster = classmethod(lambda cls, *_: cls(url, namespace="default"))
sys.exit(host.main())
"""


def group_on(member: str, since: float) -> dict[str, Any]:
    """FailoverGroup `orders` with producers and consumers on ``member`` since ``since``."""
    members = [
        {"name": m, "endpoint": f"{m}.example", "connection": {"secretRef": {"name": m}}} for m in MEMBERS
    ]
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
    status = {"producerMember": member, "consumerMember": member, "consumerSince": moment}
    return {"spec": {"primaryMember": "weu", "members": members}, "status": status}


def planned(member: str, since: float, port: int) -> TaskPlan:
    """What the operator plans for the task while the group is on ``member``."""
    spec = ReplicationTaskSpec.model_validate(SPEC)
    following = resolve_following(spec, {"orders": group_on(member, since)})
    settings = OperatorSettings(app_metrics_port=port)
    return plan_task(
        name="orders", namespace="default", spec=following.spec, settings=settings, following=following
    )


def config_map(plan: TaskPlan, checkpoint: Path) -> dict[str, Any]:
    """The rendered ConfigMap, its checkpoint where the pod mounts the claim."""
    config = json.loads(plan.config_map["data"][TASK_CONFIG_KEY])
    config["checkpointLocation"] = f"file://{checkpoint}"
    return {**plan.config_map, "data": {TASK_CONFIG_KEY: json.dumps(config)}}


def apply(api: KubeServer, plan: TaskPlan, checkpoint: Path) -> float:
    """The operator writes the task's ConfigMap; returns when."""
    body = config_map(plan, checkpoint)
    status, _ = api.request("GET", f"{CONFIGMAPS}/orders-task")
    if status == 404:
        status, answer = api.request("POST", CONFIGMAPS, body)
    else:
        patch = {"metadata": {"labels": body["metadata"]["labels"]}, "data": body["data"]}
        status, answer = api.request(
            "PATCH", f"{CONFIGMAPS}/orders-task", patch, "application/merge-patch+json"
        )
    assert status in (200, 201), answer
    return time.time()


def host_environment(
    app: dict[str, Any], plan: TaskPlan, secrets: dict[str, str], temporary: Path
) -> dict[str, str]:
    """What the pod gives the driver: each Secret key the rendered pod template names, and the rendered
    Spark settings (those the launcher adds for the cluster aside); Spark's files under ``temporary``."""
    driver = app["spec"]["driver"]["template"]["spec"]["containers"][0]
    env = {e["name"]: secrets[e["valueFrom"]["secretKeyRef"]["name"]] for e in driver["env"]}
    conf = {
        **plan.spark_app.spark_conf,
        "spark.local.dir": str(temporary),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={temporary}",
    }
    submit = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in sorted(conf.items()))
    return {**env, "PYSPARK_SUBMIT_ARGS": f"{submit} pyspark-shell"}


@pytest.fixture
def api() -> Iterator[tuple[KubeServer, str]]:
    with cuttable_api() as (server, proxy):
        yield server, proxy.url


def test_a_switch_moves_the_query_in_its_own_host_without_a_new_spark_application(
    api: tuple[KubeServer, str], emulator_factory: Any, tmp_path: Path
) -> None:
    server, url = api
    emulator = emulator_factory(HUBS)
    secrets = {name: emulator.connection_string(name) for name in (*MEMBERS, "dr")}
    port, checkpoint = free_port(), tmp_path / "checkpoint"
    on_weu = planned("weu", time.time(), port)
    app = render_spark_application("kubeflow", on_weu.spark_app)
    apply(server, on_weu, checkpoint)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environment = host_environment(app, on_weu, secrets, temporary)
    argv = ["-c", IN_TEST_CLUSTER, url, *app["spec"]["arguments"], "--master", "local[2]"]
    log = tmp_path / "host.log"
    host = start_driver(argv, log, environment)
    try:
        send(secrets["weu"], "orders", [{"body": "w1"}])
        wait_until(lambda: delivered(secrets["dr"], "copy") == 1, "the task replicates from weu", timeout=300)
        processes = session_members(host.pid)
        assert any("java" in _command(pid) for pid in processes), "the host runs its JVM"

        on_neu = planned("neu", time.time(), port)
        assert render_spark_application("kubeflow", on_neu.spark_app) == app, "no new Spark application"
        switched = apply(server, on_neu, checkpoint)
        send(secrets["neu"], "orders", [{"body": "n1"}])
        wait_until(lambda: delivered(secrets["dr"], "copy") == 2, "the task replicates from neu", timeout=300)
        wait_until(lambda: _first_batch(port) >= switched, "its status says it flows on neu", timeout=60)
        wait_until(lambda: bool(_moves(log)), "the host logs the move", timeout=60)
        assert host.poll() is None, "the host goes on"
        jvms = [pid for pid in session_members(host.pid) if "java" in _command(pid)]
        assert jvms and set(jvms) <= set(processes), "the same JVM: the Spark application did not restart"
        print(f"config written → first batch on neu: {_first_batch(port) - switched:.2f} s; {_moves(log)[0]}")
    finally:
        _stop(host)


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _first_batch(port: int) -> float:
    """When the task's first batch on the member it reads now was done (0: none yet)."""
    moment = fetch(port, task_status_path("default", "orders"))[1].get("firstBatchOnMemberTime")
    return datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp() if moment else 0.0


def _moves(log: Path) -> list[str]:
    """The host's log lines of the task's moves to neu, phase by phase."""
    return [line for line in log.read_text().splitlines() if "moved to member neu" in line]


def _stop(host: subprocess.Popen[bytes]) -> None:
    """SIGTERM as the kubelet would (every query stops, then Spark), then whatever is left."""
    host.send_signal(signal.SIGTERM)
    try:
        host.wait(timeout=60)
    except subprocess.TimeoutExpired:
        host.kill()
        host.wait()
    for pid in session_members(host.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
