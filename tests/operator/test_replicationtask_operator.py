"""The operator turns a ReplicationTask into its children and keeps its status honest."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from federator.apply import children
from support.kopf_runner import reconcile_passes
from support.kube import KubeServer
from support.orders import orders_secret, orders_service_account, orders_task
from support.polling import eventually, eventually_more

NS = "default"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
EVENTS = f"/api/v1/namespaces/{NS}/events"


def task(name: str = "orders") -> dict[str, Any]:
    return orders_task(name, NS)


def secret() -> dict[str, Any]:
    return orders_secret()


@pytest.fixture(autouse=True)
def spark_service_account(kube: KubeServer) -> None:
    """The example's target signs in with workload identity: the pods' service account, annotated with
    its client id (tests/operator/test_task_pods_operator.py shows what happens without)."""
    kube.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())


def gets_during_passes(kube: KubeServer, passes: int) -> list[Any]:
    """The GET requests the server answers while the tasks' daemons make `passes` more observation passes
    (its log keeps only the latest 50: polled)."""
    known = list(kube.emulator["get"])  # held, so that no id is reused
    ids, found = {id(r) for r in known}, []
    target = reconcile_passes("ReplicationTask") + passes
    deadline = time.monotonic() + 5 * passes
    while True:
        done = reconcile_passes("ReplicationTask") >= target  # before collecting: the last pass's reads too
        for request in list(kube.emulator["get"]):
            if id(request) not in ids:
                ids.add(id(request))
                found.append(request)
        if done:
            return found
        assert time.monotonic() < deadline, "the tasks are not observed"
        time.sleep(0.02)


def observed_twice() -> None:
    """Until the task's daemon has done two more whole observation passes (their writes included)."""
    eventually_more(lambda: reconcile_passes("ReplicationTask"), 3, message="the task is not observed")


def get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def ready_reason(kube: KubeServer, name: str = "orders") -> str | None:
    found = condition(get(kube, f"{RT}/{name}"), "Ready")
    return found["reason"] if found else None


def event_reasons(kube: KubeServer) -> list[str]:
    return [e.get("reason", "") for e in kube.request("GET", EVENTS)[1]["items"]]


def test_a_task_gets_its_children_and_honest_status(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())

    app = eventually(lambda: get(kube, f"{APPS}/orders"), message="no SparkApplication")
    config = get(kube, f"{CONFIGMAPS}/orders-task")
    owner = get(kube, f"{RT}/orders")
    assert config is not None and owner is not None
    for child in (app, config):
        assert child["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    assert app["spec"]["executor"]["instances"] == 2

    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")
    rt = get(kube, f"{RT}/orders")
    assert rt is not None
    assert rt["status"]["observedGeneration"] == rt["metadata"]["generation"]
    assert condition(rt, "Reconciling")["status"] == "True"  # type: ignore[index]
    assert condition(rt, "Stalled")["status"] == "False"  # type: ignore[index]
    assert rt["status"]["sparkApplication"]["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert rt["spec"] == task()["spec"], "the operator must never change the user's spec"
    assert "SparkApplicationCreated" in event_reasons(kube)

    kube.request(
        "PATCH",
        f"{APPS}/orders/status",
        {"status": {"applicationState": {"state": "RUNNING"}}},
        "application/merge-patch+json",
    )
    eventually(lambda: ready_reason(kube) == "Running")
    rt = get(kube, f"{RT}/orders")
    assert condition(rt, "SparkApplicationRunning")["status"] == "True"  # type: ignore[index]
    assert condition(rt, "Reconciling")["status"] == "False"  # type: ignore[index]
    assert kube.server_errors() == []


def test_a_failed_spark_application_stalls_the_task_with_its_error(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())
    eventually(lambda: get(kube, f"{APPS}/orders"))
    failed = {"applicationState": {"state": "FAILED", "errorMessage": "driver OOMKilled"}}
    kube.request("PATCH", f"{APPS}/orders/status", {"status": failed}, "application/merge-patch+json")
    eventually(lambda: ready_reason(kube) == "SparkApplicationFailed")
    rt = get(kube, f"{RT}/orders")
    stalled = condition(rt, "Stalled")
    assert stalled is not None and stalled["status"] == "True" and "driver OOMKilled" in stalled["message"]


def test_children_changed_by_hand_are_put_back(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())
    eventually(lambda: get(kube, f"{APPS}/orders"))

    eventually(lambda: (get(kube, f"{RT}/orders") or {}).get("status", {}).get("sparkApplication"))
    kube.request("DELETE", f"{APPS}/orders")
    eventually(lambda: get(kube, f"{APPS}/orders"), message="deleted SparkApplication not restored")
    eventually(lambda: "DriftCorrected" in event_reasons(kube), message="no Event for the recreated child")
    # A field the operator holds, removed by hand, is applied again (a value another manager changes is a
    # conflict instead: tests/operator/test_children_conflicts_operator.py).
    kube.request(
        "PATCH", f"{CONFIGMAPS}/orders-task", {"data": {"task.json": None}}, "application/merge-patch+json"
    )
    eventually(lambda: (get(kube, f"{CONFIGMAPS}/orders-task") or {}).get("data", {}).get("task.json"))
    eventually(lambda: event_reasons(kube).count("DriftCorrected") >= 2, message="no Event for the ConfigMap")


def test_a_spec_change_updates_the_spark_application(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())
    eventually(lambda: get(kube, f"{APPS}/orders"))
    changed = copy.deepcopy(task()["spec"])
    changed["runtime"]["executor"]["instances"] = 5
    kube.request("PATCH", f"{RT}/orders", {"spec": changed}, "application/merge-patch+json")
    eventually(
        lambda: (get(kube, f"{APPS}/orders") or {}).get("spec", {}).get("executor", {}).get("instances") == 5
    )
    rt = eventually(
        lambda: (r := get(kube, f"{RT}/orders")) and r["status"].get("observedGeneration") == 2 and r
    )
    assert rt["metadata"]["generation"] == 2


def test_a_missing_secret_stalls_the_task_until_it_appears(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", RT, task())
    eventually(lambda: ready_reason(kube) == "SecretNotFound")
    stalled = condition(get(kube, f"{RT}/orders"), "Stalled")
    assert stalled is not None and "orders-weu" in stalled["message"]
    assert get(kube, f"{APPS}/orders") is None, "nothing may run without its credentials"
    kube.request("POST", SECRETS, secret())
    eventually(
        lambda: get(kube, f"{APPS}/orders"), message="the task did not recover once the Secret existed"
    )


def test_specs_the_operator_cannot_run_are_stalled_with_a_reason(federator_operator: KubeServer) -> None:
    kube = federator_operator
    local = task("local-only")
    local["spec"]["source"]["eventHub"]["connection"] = {"emulator": {"namespace": "primary"}}
    bad_sql = task("bad-sql")
    bad_sql["spec"]["targets"][0]["condition"] = "region = 'eu' AND"
    kube.request("POST", RT, local)
    kube.request("POST", RT, bad_sql)
    eventually(lambda: ready_reason(kube, "local-only") == "EmulatorOnlyInLocalMode")
    eventually(lambda: ready_reason(kube, "bad-sql") == "InvalidSpec")
    message = condition(get(kube, f"{RT}/bad-sql"), "Stalled")["message"]  # type: ignore[index]
    assert "spec.targets[0].condition" in message
    assert get(kube, f"{APPS}/local-only") is None and get(kube, f"{APPS}/bad-sql") is None


def test_status_is_not_rewritten_when_nothing_changes(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())
    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")
    before = get(kube, f"{RT}/orders")["metadata"]["resourceVersion"]  # type: ignore[index]
    observed_twice()
    after = get(kube, f"{RT}/orders")["metadata"]["resourceVersion"]  # type: ignore[index]
    assert after == before


def test_deleting_a_task_deletes_its_children_and_releases_it(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())
    eventually(lambda: get(kube, f"{APPS}/orders"))
    rt = get(kube, f"{RT}/orders")
    assert rt is not None and "federator.io/finalizer" in rt["metadata"].get("finalizers", [])
    kube.request("DELETE", f"{RT}/orders")
    eventually(lambda: get(kube, f"{RT}/orders") is None, message="the task was not released")
    assert get(kube, f"{APPS}/orders") is None
    assert get(kube, f"{CONFIGMAPS}/orders-task") is None


def test_spec_warnings_are_posted_as_warning_events_once_per_generation(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", SECRETS, secret())
    slip = task()
    slip["spec"]["source"]["eventHub"]["partitionIds"] = ["0", "0"]
    kube.request("POST", RT, slip)
    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")

    def warnings() -> list[str]:
        items = kube.request("GET", EVENTS)[1]["items"]
        return [e["message"] for e in items if (e.get("type"), e.get("reason")) == ("Warning", "SpecWarning")]

    expected = "spec.source.eventHub.partitionIds[1]: names the partition of partitionIds[0] again"
    eventually(lambda: warnings() == [expected], message="no SpecWarning Event")
    observed_twice()  # more passes of the same generation: no repeat
    assert warnings() == [expected]
    changed = copy.deepcopy(slip["spec"])
    changed["runtime"]["executor"]["instances"] = 3
    kube.request("PATCH", f"{RT}/orders", {"spec": changed}, "application/merge-patch+json")
    eventually(lambda: len(warnings()) == 2, message="no SpecWarning Event for the new generation")


def test_observing_a_settled_task_asks_the_api_server_nothing_about_its_children(
    federator_operator: KubeServer,
) -> None:
    """Its ConfigMap and Spark application come from their watched copies; the Secret, the pods' service
    account and the checkpoint claim the three tasks share are read at most once per observe interval each."""
    kube = federator_operator
    local = secret()  # nothing listens on localhost's AMQP port: each source probe fails at once
    local["stringData"]["connectionString"] = "Endpoint=sb://localhost/;SharedAccessKeyName=k;SharedAccessKey=eA=="
    kube.request("POST", SECRETS, local)
    claim = {"metadata": {"name": "federator-checkpoints"}, "spec": {"accessModes": ["ReadWriteMany"]}}
    kube.request("POST", f"/api/v1/namespaces/{NS}/persistentvolumeclaims", claim)
    names = ("orders", "orders-2", "orders-3")
    for name in names:
        kube.request("POST", RT, task(name))
    eventually(lambda: all(ready_reason(kube, name) == "SparkApplicationPending" for name in names))
    # Three passes of each task: three observe intervals.
    reads = [r for r in gets_during_passes(kube, 3 * len(names)) if r.params.get("watch") != "true"]
    paths = [r.url.path for r in reads]
    assert not [p for p in paths if "/configmaps" in p or "/sparkapplications" in p], paths
    for named in ("/secrets/", "/serviceaccounts/", "/persistentvolumeclaims/"):
        assert len([p for p in paths if named in p]) <= 4, paths


def test_observing_the_children_as_the_operator_applied_them_walks_none(
    federator_operator: KubeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the operator's own apply returned is as planned (server-side apply is idempotent): its observe
    passes judge no drift by walking those children (apply/children.py `drifted`) until someone changes one.
    At a thousand tasks, every first observe pass walked two children."""
    kube = federator_operator
    walked: list[str] = []
    judge = children.drifted

    def walking(desired: dict[str, Any], stored: dict[str, Any]) -> bool:
        walked.append(stored["metadata"]["name"])
        return judge(desired, stored)

    monkeypatch.setattr(children, "drifted", walking)
    kube.request("POST", SECRETS, secret())
    kube.request("POST", RT, task())
    eventually(lambda: ready_reason(kube) == "SparkApplicationPending")
    observed_twice()
    assert walked == []

    kube.request(
        "PATCH", f"{CONFIGMAPS}/orders-task", {"data": {"task.json": None}}, "application/merge-patch+json"
    )
    eventually(lambda: (get(kube, f"{CONFIGMAPS}/orders-task") or {}).get("data", {}).get("task.json"))
    assert walked == ["orders-task"], "the version changed by hand is walked, once"
