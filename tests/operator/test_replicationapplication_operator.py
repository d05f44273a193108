"""Tasks that name a ReplicationApplication run in its one Spark application: the operator renders that
application from its members, gives each member only its task ConfigMap (labelled for the shared driver),
and keeps every status honest — the application lists its members, and each member says what the shared
application's state means for it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from support.kube import KubeServer
from support.orders import orders_secret, orders_service_account, orders_task
from support.polling import eventually

NS = "default"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
RAPP = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationapplications"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
EVENTS = f"/api/v1/namespaces/{NS}/events"
MERGE = "application/merge-patch+json"


def member(name: str, application: str = "shared") -> dict[str, Any]:
    """The orders example as a member: what a JVM needs is the application's, the rest stays."""
    task = orders_task(name, NS)
    task["spec"]["runtime"] = {"applicationRef": {"name": application}, "triggerIntervalSeconds": 2}
    return task


def application(name: str = "shared", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationApplication",
        "metadata": {"name": name},
        "spec": {"executor": {"instances": 2}, **spec},
    }


@pytest.fixture(autouse=True)
def namespace_objects(kube: KubeServer) -> None:
    """The members' Secret, and the service account the shared pods sign in as (workload identity)."""
    kube.request("POST", f"/api/v1/namespaces/{NS}/secrets", orders_secret())
    kube.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())


def get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), {})


def ready_reason(kube: KubeServer, path: str) -> str | None:
    return condition(get(kube, path), "Ready").get("reason")


def set_state(kube: KubeServer, name: str, state: dict[str, Any]) -> None:
    kube.request("PATCH", f"{APPS}/{name}/status", {"status": {"applicationState": state}}, MERGE)


def event_messages(kube: KubeServer, reason: str) -> list[str]:
    return [
        e.get("message", "") for e in kube.request("GET", EVENTS)[1]["items"] if e.get("reason") == reason
    ]


def test_members_share_one_spark_application_and_report_its_state(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, member("a"))
    kube.request("POST", RT, member("b"))

    app = eventually(lambda: get(kube, f"{APPS}/shared"), message="no SparkApplication for the application")
    owner = get(kube, f"{RAPP}/shared")
    assert owner is not None and app["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    assert app["spec"]["arguments"] == [
        "--task-configmaps",
        "federator.io/application=shared",
        "--metrics-port",
        "9464",
    ]
    assert app["spec"]["executor"]["instances"] == 2
    assert app["spec"]["sparkConf"]["spark.scheduler.mode"] == "FAIR"
    for name in ("a", "b"):
        config = eventually(lambda name=name: get(kube, f"{CONFIGMAPS}/{name}-task"))
        assert config["metadata"]["labels"]["federator.io/application"] == "shared"
        assert get(kube, f"{APPS}/{name}") is None, "a member has no Spark application of its own"
    status = eventually(
        lambda: (a := get(kube, f"{RAPP}/shared")) and a["status"].get("memberCount") == 2 and a
    )
    assert status["status"]["members"] == [{"name": "a", "ready": False}, {"name": "b", "ready": False}]
    assert ready_reason(kube, f"{RAPP}/shared") == "SparkApplicationPending"
    eventually(lambda: ready_reason(kube, f"{RT}/a") == "SparkApplicationPending")

    set_state(kube, "shared", {"state": "RUNNING"})
    for name in ("a", "b"):
        eventually(lambda name=name: ready_reason(kube, f"{RT}/{name}") == "Running")
    ready = condition(get(kube, f"{RT}/a"), "Ready")
    assert "ReplicationApplication shared" in ready["message"]
    assert (get(kube, f"{RT}/a") or {})["status"]["sparkApplication"]["name"] == "shared"
    eventually(
        lambda: ready_reason(kube, f"{RAPP}/shared") == "Running", message="the application is not Ready"
    )
    members = (get(kube, f"{RAPP}/shared") or {})["status"]["members"]
    assert members == [{"name": "a", "ready": True}, {"name": "b", "ready": True}]
    assert kube.server_errors() == []


def test_a_failed_shared_driver_stalls_every_member_with_its_error(federator_operator: KubeServer) -> None:
    kube = federator_operator
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, member("a"))
    kube.request("POST", RT, member("b"))
    eventually(lambda: get(kube, f"{APPS}/shared"))
    set_state(kube, "shared", {"state": "FAILED", "errorMessage": "driver OOMKilled"})
    for name in ("a", "b"):
        eventually(lambda name=name: ready_reason(kube, f"{RT}/{name}") == "SparkApplicationFailed")
        stalled = condition(get(kube, f"{RT}/{name}"), "Stalled")
        assert stalled["status"] == "True" and "driver OOMKilled" in stalled["message"]
        assert "ReplicationApplication shared" in stalled["message"]
    eventually(lambda: ready_reason(kube, f"{RAPP}/shared") == "SparkApplicationFailed")


def test_a_member_naming_a_missing_application_is_stalled_at_its_field_until_it_exists(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", RT, member("a", application="later"))
    eventually(lambda: ready_reason(kube, f"{RT}/a") == "ApplicationNotFound")
    stalled = condition(get(kube, f"{RT}/a"), "Stalled")
    assert stalled["status"] == "True" and stalled["message"].startswith("spec.runtime.applicationRef.name: ")
    assert "'later'" in stalled["message"]
    assert get(kube, f"{APPS}/a") is None and get(kube, f"{APPS}/later") is None

    kube.request("POST", RAPP, application("later"))
    eventually(lambda: get(kube, f"{APPS}/later"), message="the application did not start")
    eventually(
        lambda: ready_reason(kube, f"{RT}/a") == "SparkApplicationPending",
        message="the member did not recover once its application existed",
    )


def test_a_task_that_joins_an_application_stops_its_own_spark_application(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, orders_task("orders", NS))
    eventually(lambda: get(kube, f"{APPS}/orders"), message="the task's own Spark application")

    joined = copy.deepcopy(member("orders")["spec"]["runtime"])
    # A merge patch: the fields that are the application's now are removed from the task.
    cleared = {
        "launcher": None,
        "driver": None,
        "executor": None,
        "maxEventsPerTrigger": None,
        "checkpoint": None,
    }
    kube.request("PATCH", f"{RT}/orders", {"spec": {"runtime": {**cleared, **joined}}}, MERGE)
    eventually(lambda: get(kube, f"{APPS}/orders") is None, message="its own Spark application still runs")
    config = eventually(
        lambda: (
            (c := get(kube, f"{CONFIGMAPS}/orders-task"))
            and "federator.io/application" in c["metadata"]["labels"]
            and c
        )
    )
    assert config["metadata"]["labels"]["federator.io/application"] == "shared"
    messages = eventually(lambda: event_messages(kube, "Deleted"))
    assert any("runs in ReplicationApplication shared" in m for m in messages)
    assert get(kube, f"{APPS}/shared") is not None


def test_deleting_an_application_deletes_its_spark_application_and_its_members_say_so(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, member("a"))
    eventually(lambda: get(kube, f"{APPS}/shared"))
    kube.request("DELETE", f"{RAPP}/shared")
    eventually(lambda: get(kube, f"{RAPP}/shared") is None, message="the application is not released")
    assert get(kube, f"{APPS}/shared") is None
    eventually(lambda: ready_reason(kube, f"{RT}/a") == "ApplicationNotFound")


def test_a_member_named_as_its_application_never_removes_the_applications_spark_application(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, member("shared"))
    eventually(lambda: ready_reason(kube, f"{RT}/shared") == "SparkApplicationPending")
    kube.request("DELETE", f"{RT}/shared")
    eventually(lambda: get(kube, f"{RT}/shared") is None, message="the task is not released")
    assert get(kube, f"{CONFIGMAPS}/shared-task") is None
    assert get(kube, f"{APPS}/shared") is not None, "the application's Spark application was deleted"


def test_a_member_bringing_a_new_secret_updates_the_application_which_is_not_drift(
    federator_operator: KubeServer,
) -> None:
    kube = federator_operator
    kube.request("POST", RAPP, application())
    kube.request("POST", RT, member("a"))
    eventually(lambda: get(kube, f"{APPS}/shared") and get(kube, f"{CONFIGMAPS}/a-task"))
    eventually(
        lambda: "orders-weu" in str(get(kube, f"{APPS}/shared")), message="a's Secret is not in the pods"
    )
    other = {**orders_secret(), "metadata": {"name": "orders-neu"}}
    kube.request("POST", f"/api/v1/namespaces/{NS}/secrets", other)
    b = member("b")
    b["spec"]["source"]["eventHub"]["connection"]["secretRef"]["name"] = "orders-neu"
    kube.request("POST", RT, b)
    eventually(
        lambda: "orders-neu" in str(get(kube, f"{APPS}/shared")), message="b's Secret is not in the pods"
    )
    updated = eventually(lambda: event_messages(kube, "SparkApplicationUpdated"))
    assert "restarts with every member's query" in updated[0]
    assert event_messages(kube, "DriftCorrected") == []
