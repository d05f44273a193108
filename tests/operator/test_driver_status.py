"""In a cluster the task's counts, lag per source partition and checkpoint translation reach its status
from the running driver: the operator reads the driver's `/status` (the replication app's own endpoint,
served here by its real code) at the driver pod's IP; `kubectl get` shows the worst partition."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from test_replicationtask_operator import APPS, NS, RT, SECRETS, get, secret, task

from federator.crds.generate import crd
from federator.settings import OperatorSettings
from federator_contract.api.kinds import REPLICATION_TASK
from federator_spark import metrics
from support.kube import KubeServer
from support.orders import orders_service_account
from support.polling import eventually

PODS = f"/api/v1/namespaces/{NS}/pods"
CRD = crd(REPLICATION_TASK)
LAG = {
    "measuredAt": "2026-11-26T12:00:00Z",
    "eventsBehind": 12,
    "secondsBehind": 7.5,
    "rpoSeconds": 7.5,
    "worstPartition": "1",
    "partitions": {
        "0": {"eventsBehind": 0, "secondsBehind": 0.0, "sourceSequence": 41, "replicatedSequence": 41},
        "1": {"eventsBehind": 12, "secondsBehind": 7.5, "sourceSequence": 52, "replicatedSequence": 40},
    },
}
TRANSLATION = {
    "at": "2026-11-26T12:00:01Z",
    "groups": {"orders-app": {"source_checkpoints": 2, "written": 2, "consumers_on_target": 0}},
}


@pytest.fixture
def driver(tmp_path):
    """The replication app's metrics endpoint over a status file, lag and translation of its own."""
    status = tmp_path / "status.json"
    now = time.time()
    status.write_text(
        json.dumps(
            {
                "targets": {"copy": {"eventsOut": 90, "deadLettered": 1}},
                "lastBatchTime": "2026-11-26T11:59:59Z",
                "firstBatchOnMemberTime": "2026-11-26T11:58:02Z",
                "eventsDropped": {"following": 6, "filtered": 2},
                "replaySkipped": 3,
                "lastEnqueuedEpoch": now,
            }
        )
    )
    (tmp_path / "lag.json").write_text(json.dumps(LAG))
    (tmp_path / "translation.json").write_text(json.dumps(TRANSLATION))
    server = metrics.serve(0, str(status), NS, "orders")
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def operator_settings(driver) -> OperatorSettings:
    return OperatorSettings(observe_interval_seconds=1, retry_seconds=1, app_metrics_port=driver.server_port)


def driver_pod(phase: str = "Running") -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {"federator.io/replication-task": "orders", "spark-role": "driver"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orders-driver", "labels": labels},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark"}]},
    }
    return pod, {"status": {"phase": phase, "podIP": "127.0.0.1"}}


def test_lag_per_partition_and_translation_reach_the_task_status(
    federator_operator: KubeServer, kubectl
) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())
    kube.request("POST", RT, task())
    eventually(lambda: get(kube, f"{APPS}/orders"))
    pod, pod_status = driver_pod()
    kube.request("POST", PODS, pod)
    kube.request("PATCH", f"{PODS}/orders-driver/status", pod_status, "application/merge-patch+json")
    running = {"status": {"applicationState": {"state": "RUNNING"}}}
    kube.request("PATCH", f"{APPS}/orders/status", running, "application/merge-patch+json")

    eventually(lambda: ((get(kube, f"{RT}/orders") or {}).get("status") or {}).get("lag"))
    status = get(kube, f"{RT}/orders")["status"]  # type: ignore[index]
    assert status["eventsReplicated"] == 90 and status["eventsDeadLettered"] == 1
    assert (status["eventsSkippedAfterSwitch"], status["eventsFoundWritten"]) == (6, 3)
    assert status["firstBatchOnMemberTime"] == "2026-11-26T11:58:02Z"
    assert status["lag"] == {
        "measuredAt": "2026-11-26T12:00:00Z",
        "eventsBehind": 12,
        "secondsBehind": 7.5,
        "rpoSeconds": 7.5,
        "worstPartition": "1",
        "partitions": [
            {
                "partition": "0",
                "eventsBehind": 0,
                "secondsBehind": 0.0,
                "sourceSequence": 41,
                "replicatedSequence": 41,
            },
            {
                "partition": "1",
                "eventsBehind": 12,
                "secondsBehind": 7.5,
                "sourceSequence": 52,
                "replicatedSequence": 40,
            },
        ],
    }
    assert status["checkpointTranslation"] == {
        "lastCycleTime": "2026-11-26T12:00:01Z",
        "consumerGroups": [
            {
                "consumerGroup": "orders-app",
                "sourceCheckpoints": 2,
                "partitionsWritten": 2,
                "partitionsLeftToConsumers": 0,
            }
        ],
    }
    # The CRD's printer columns over this status (the fake API server serves no Table; kubectl evaluates
    # the same JSONPaths here).
    columns = {c["name"]: c["jsonPath"] for c in CRD["spec"]["versions"][0]["additionalPrinterColumns"]}
    wanted = ("Lag", "Behind", "Worst", "RPO")
    shown = kubectl(
        "get", "rt", "orders", "-o", "custom-columns=" + ",".join(f"{n}:{columns[n]}" for n in wanted)
    )
    assert shown.stdout.split()[len(wanted) :] == ["7.5", "12", "1", "7.5"]
