"""In a cluster, a task whose checkpoint holds another source's positions (its Secret re-pointed to another
namespace) stops its driver with `CheckpointSourceMismatch`: the application is Failed, and the task must
say why — the refusal and its remedy, the `federator.io/reset-positions` annotation — not a bare
`SparkApplicationFailed`. The driver's words reach the operator as the driver container's termination
message, in the status documents each launcher records (observe/sparkapps.py):

* Kubeflow spark-operator: `status.applicationState.errorMessage` holds only
  `driver container failed with ExitCode: <n>, Reason: <reason>` (its controller's `updateDriverState`),
  so the words are read from the driver pod's `containerStatuses[].state.terminated.message`;
* Apache Spark Kubernetes Operator: `Failed` with "Driver has one or more failed critical container(s),
  refer last observed status for details." and the driver pod's status in `lastObservedDriverStatus`;
  the run then moves on to `ResourceReleased`, the `Failed` state staying in `stateTransitionHistory`.

The documents below have those shapes (each checked against the launcher's real CRD); the driver's words
are the replication app's own exception, as the end of its log (`FallbackToLogsOnError`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import pytest
import pytest_asyncio

from federator.kube.client import KubeClient
from federator.observe.sparkapps import failed_driver_pod, observe
from federator.reconcile.sparkapp_status import spark_findings
from federator.validation.schema import openapi_to_json_schema
from federator_contract.appstatus import CHECKPOINT_SOURCE_MISMATCH
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.taskconfig import RESET_POSITIONS_ANNOTATION
from federator_spark.source_binding import CheckpointSourceMismatchError, SourceBinding, mismatch_message
from support.kube import KubeServer
from support.spark_crds import served_schema

KUBEFLOW, APACHE = "sparkoperator.k8s.io/v1beta2", "spark.apache.org/v1"
DRIVER = "spark-kubernetes-driver"
BEFORE = SourceBinding("weu-orders.servicebus.windows.net", "orders", "$Default")
AFTER = SourceBinding("attacker-owned.servicebus.windows.net", "orders", "$Default")


def driver_refusal() -> str:
    """The last lines of the driver's log as the app stops: Python's traceback of the refusal, then
    Spark's shutdown."""
    layout = CheckpointLayout(Path("/checkpoints/team-a/orders"))
    error = CheckpointSourceMismatchError(mismatch_message(layout, BEFORE, AFTER))
    return "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/opt/federator/federator_spark/app.py", line 97, in run',
            "    source_binding.bind(layout, plan.source, config.reset_positions)",
            f"federator_spark.source_binding.{type(error).__name__}: {error}",
            "26/11/29 14:02:12 INFO ShutdownHookManager: Shutdown hook called",
        ]
    )


def terminated(message: str, exit_code: int = 1) -> dict[str, Any]:
    finished = {"exitCode": exit_code, "reason": "Error", "finishedAt": "2026-11-29T14:02:12Z"}
    return {"terminated": {**finished, "message": message} if message else finished}


def pod_status(message: str) -> dict[str, Any]:
    container = {"name": DRIVER, "ready": False, "restartCount": 0, "state": terminated(message)}
    container |= {"image": "ghcr.io/federator/federator-spark:0.1.0", "imageID": "", "lastState": {}}
    return {"phase": "Failed", "containerStatuses": [container]}


def kubeflow_failed() -> dict[str, Any]:
    state = {"state": "FAILED", "errorMessage": "driver container failed with ExitCode: 1, Reason: Error"}
    driver = {"podName": "orders-driver", "webUIServiceName": "orders-ui-svc"}
    return {"status": {"applicationState": state, "driverInfo": driver, "executionAttempts": 1}}


def apache_state(summary: str, message: str, driver: dict[str, Any] | None = None) -> dict[str, Any]:
    state = {"currentStateSummary": summary, "message": message, "lastTransitionTime": "2026-11-29T14:02:13Z"}
    return state | ({"lastObservedDriverStatus": driver} if driver is not None else {})


DRIVER_FAILED = "Driver has one or more failed critical container(s), refer last observed status for details."


def apache_run(driver_message: str, *, released: bool) -> dict[str, Any]:
    """A run that went Submitted → DriverRequested → DriverStarted → DriverReady → Failed, and then (as the
    operator releases a failed run's pods) ResourceReleased."""
    history = [
        apache_state("Submitted", "Spark application has been created on Kubernetes Cluster."),
        apache_state("DriverRequested", "Requested driver from resource scheduler."),
        apache_state("DriverStarted", "Driver has started running."),
        apache_state("DriverReady", "Driver has critical container(s) ready."),
        apache_state("Failed", DRIVER_FAILED, pod_status(driver_message)),
    ]
    if released:
        history.append(apache_state("ResourceReleased", "Application resources have been released."))
    return {
        "status": {
            "currentState": history[-1],
            "stateTransitionHistory": {str(i): state for i, state in enumerate(history)},
        }
    }


def schema_errors(launcher: str, app: dict[str, Any]) -> list[str]:
    schema = openapi_to_json_schema(served_schema(launcher)["properties"]["status"])
    return [error.message for error in jsonschema.Draft202012Validator(schema).iter_errors(app["status"])]


def assert_refused_with_remedy(seen: Any) -> None:
    assert (seen.phase, seen.refusal) == ("Failed", CHECKPOINT_SOURCE_MISMATCH)
    assert seen.message.startswith("the driver stopped: the checkpoint at /checkpoints/team-a/orders")
    assert BEFORE.namespace in seen.message and AFTER.namespace in seen.message
    assert f"set the ReplicationTask's annotation {RESET_POSITIONS_ANNOTATION} to a new value" in seen.message
    assert "ShutdownHookManager" not in seen.message, "only the refusal's own line"


def test_kubeflow_the_driver_pods_words_name_the_refusal_and_its_remedy() -> None:
    app, driver = kubeflow_failed(), {"status": pod_status(driver_refusal())}
    assert schema_errors("kubeflow", app) == []
    assert_refused_with_remedy(observe(KUBEFLOW, app, driver))


@pytest.mark.parametrize("released", [False, True], ids=["failed", "resources-released"])
def test_apache_the_last_observed_driver_status_names_the_refusal_and_its_remedy(released: bool) -> None:
    app = apache_run(driver_refusal(), released=released)
    assert schema_errors("apache", app) == []
    assert_refused_with_remedy(observe(APACHE, app))


def test_a_log_tail_that_cut_the_apps_remedy_still_gets_it() -> None:
    cut = driver_refusal().split("; nothing is read", 1)[0]
    seen = observe(KUBEFLOW, kubeflow_failed(), {"status": pod_status(cut)})
    assert seen.refusal == CHECKPOINT_SOURCE_MISMATCH
    assert seen.message.endswith(
        f"set the ReplicationTask's annotation {RESET_POSITIONS_ANNOTATION} to a new value (the old "
        "checkpoint is kept)"
    )


@pytest.mark.parametrize(
    "words",
    [
        "",  # no termination message (no FallbackToLogsOnError, nothing written)
        "java.lang.OutOfMemoryError: Java heap space",
        "the checkpoint at /x mentions CheckpointSourceMismatch without being one",
    ],
)
def test_any_other_failure_stays_a_failed_application(words: str) -> None:
    kubeflow = observe(KUBEFLOW, kubeflow_failed(), {"status": pod_status(words)})
    assert (kubeflow.phase, kubeflow.refusal) == ("Failed", "")
    assert kubeflow.message == "driver container failed with ExitCode: 1, Reason: Error"
    apache = observe(APACHE, apache_run(words, released=False))
    assert (apache.phase, apache.refusal, apache.message) == ("Failed", "", DRIVER_FAILED)


def test_a_run_that_started_again_is_not_held_to_its_predecessors_refusal() -> None:
    app = apache_run(driver_refusal(), released=True)
    history = app["status"]["stateTransitionHistory"]
    history["6"] = apache_state("ScheduledToRestart", "Application is scheduled to restart.")
    history["7"] = apache_state("Submitted", "Spark application has been created on Kubernetes Cluster.")
    app["status"]["currentState"] = history["7"]
    assert (observe(APACHE, app).phase, observe(APACHE, app).refusal) == ("Pending", "")
    running = kubeflow_failed()
    running["status"]["applicationState"] = {"state": "RUNNING"}
    seen = observe(KUBEFLOW, running, {"status": pod_status(driver_refusal())})
    assert (seen.phase, seen.refusal) == ("Running", ""), "a driver pod's past words are read only on failure"


@pytest_asyncio.fixture
async def client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    api = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield api
    await api.close()


@pytest.mark.asyncio
async def test_the_operator_reads_a_failed_kubeflow_drivers_pod_by_its_name(
    kube: KubeServer, client: KubeClient
) -> None:
    pods = "/api/v1/namespaces/team-a/pods"
    for name in ("orders-driver", "other-driver"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": []}}
        assert kube.request("POST", pods, pod)[0] in (200, 201)
    status = {"status": pod_status(driver_refusal())}
    assert (
        kube.request("PATCH", f"{pods}/orders-driver/status", status, "application/merge-patch+json")[0]
        == 200
    )
    app = kubeflow_failed()
    driver = await failed_driver_pod(client, "team-a", KUBEFLOW, app)
    assert driver is not None and driver["metadata"]["name"] == "orders-driver"
    assert_refused_with_remedy(observe(KUBEFLOW, app, driver))
    running = {"status": {**app["status"], "applicationState": {"state": "RUNNING"}}}
    assert await failed_driver_pod(client, "team-a", KUBEFLOW, running) is None
    assert await failed_driver_pod(client, "team-a", APACHE, apache_run("", released=False)) is None


def test_a_refusal_stalls_the_task_with_its_own_reason_not_as_a_failed_application() -> None:
    driver = {"status": pod_status(driver_refusal())}
    refused = spark_findings(observe(KUBEFLOW, kubeflow_failed(), driver), "orders")
    failed = spark_findings(observe(KUBEFLOW, kubeflow_failed()), "orders")
    assert stalled_reason(refused) == CHECKPOINT_SOURCE_MISMATCH
    assert stalled_reason(failed) == "SparkApplicationFailed"


def stalled_reason(found: Any) -> str:
    (stalled,) = [u for u in found.condition_updates if u.type == "Stalled"]
    assert stalled.status == "True"
    return str(stalled.reason)

