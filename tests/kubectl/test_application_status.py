"""`kubectl federator status` and `report` with tasks sharing a ReplicationApplication: the application's
tree shows its Spark application and its member tasks (in full, unless a FailoverGroup or a
ServiceBusMirror already draws them), and every member's row names its application."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from plugin_helpers import API, MERGE, Plugin, create
from plugin_seeds import cond, following_task, group, plain_task, ready, task_status

from support.kube import KubeServer

APPLICATION = "shared"


def member(task: dict[str, Any], application: str = APPLICATION) -> dict[str, Any]:
    """The task, its query running in `application` (the JVM's settings are the application's)."""
    task["spec"]["runtime"] = {"applicationRef": {"name": application}}
    return task


def create_application(
    kube: KubeServer, name: str, spec: dict[str, Any], status: dict[str, Any] | None = None
) -> None:
    """As kubectl creates it and, with `status`, as the operator leaves it."""
    path = f"{API}/namespaces/default/replicationapplications"
    application = {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationApplication",
        "metadata": {"name": name},
    }
    code, body = kube.request("POST", path, {**application, "spec": spec})
    assert code in (200, 201), body
    if status is not None:
        code, body = kube.request("PATCH", f"{path}/{name}/status", {"status": status}, MERGE)
        assert code == 200, body


def seed_application(kube: KubeServer) -> None:
    """Application `shared` running three members: `fast` and `stuck` on their own, `archive` following
    FailoverGroup `orders`; `solo` runs in a Spark application of its own."""
    status = {
        "observedGeneration": 1,
        "conditions": ready("Running", "the Spark application runs 3 member tasks"),
        "members": [{"name": n, "ready": n != "stuck"} for n in ("archive", "fast", "stuck")],
        "memberCount": 3,
        "sparkApplication": {
            "apiVersion": "sparkoperator.k8s.io/v1beta2",
            "name": APPLICATION,
            "state": "RUNNING",
        },
    }
    create_application(kube, APPLICATION, {"scheduling": {"mode": "FIFO"}}, status)
    driver = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{APPLICATION}-driver",
            "labels": {"federator.io/application": APPLICATION, "spark-role": "driver"},
        },
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "federator"}]},
    }
    create(kube, driver, {"phase": "Running"})
    create(kube, group(), {"observedGeneration": 1, "conditions": ready("Active"), "phase": "Normal"})
    create(kube, member(following_task()), task_status(1.0, 10, ready("Running")))
    create(kube, member(plain_task("fast")), task_status(0.5, 700, ready("Running")))
    stuck = [
        cond("Ready", "False", "QueryFailed", "the query of stuck failed"),
        cond("Stalled", "True", "QueryFailed"),
    ]
    create(kube, member(plain_task("stuck")), task_status(None, None, stuck))
    create(kube, plain_task("solo"), task_status(2.0, 20, ready("Running")))


def test_the_application_shows_its_spark_application_and_its_member_tasks(
    kube: KubeServer, federator: Plugin
) -> None:
    seed_application(kube)
    text = federator("status").stdout
    part = text[text.index("ReplicationApplication default/shared") : text.index("ReplicationTasks\n")]
    assert part.startswith("ReplicationApplication default/shared  Ready Running  FIFO · 3 member tasks")
    assert "sparkoperator.k8s.io/v1beta2 shared: RUNNING" in part and "driver shared-driver Running" in part
    # Members worst first; one that a group draws is named there, not drawn twice.
    assert part.index("ReplicationTask default/stuck") < part.index("ReplicationTask default/fast")
    assert "ReplicationTask default/archive  shown under FailoverGroup default/orders" in part
    assert "0.5s behind · 700 replicated" in part
    # Every member's row names its application, wherever it is drawn; the others' rows do not.
    group_part = text[text.index("FailoverGroup default/orders") : text.index("ReplicationApplication")]
    assert (
        "ReplicationTask default/archive  Ready Running  its source follows the group · application shared"
        in (group_part)
    )
    assert "Ready Running  application shared" in part
    others = text[text.index("ReplicationTasks\n") :]
    assert "default/solo" in others and "application" not in others
    assert "default/fast" not in others, "a member is drawn once"


def test_one_application_as_json(kube: KubeServer, federator: Plugin) -> None:
    seed_application(kube)
    data = json.loads(federator("status", "rapp/shared", "-o", "json").stdout)
    assert data["failoverGroups"] == [] and data["replicationTasks"] == []
    [found] = data["replicationApplications"]
    assert (found["name"], found["state"], found["scheduling"]) == ("shared", "Ready", "FIFO")
    assert found["sparkApplication"]["pods"][0]["name"] == "shared-driver"
    members = {m["name"]: m for m in found["members"]}
    assert list(members) == ["stuck", "archive", "fast"], "worst first"
    assert members["archive"]["task"]["application"] == "shared" and members["archive"]["shownUnder"] is None
    assert members["stuck"]["task"]["state"] == "Stalled"
    # A task on its own says so: no application.
    [solo] = json.loads(federator("status", "rt/solo", "-o", "json").stdout)["replicationTasks"]
    assert solo["application"] is None


def test_an_application_no_task_names_says_so(kube: KubeServer, federator: Plugin) -> None:
    seed_application(kube)
    create(
        kube, member(plain_task("elsewhere"), application="other"), task_status(None, None, ready("Running"))
    )
    create_application(kube, "idle", {})
    text = federator("status", "rapp/idle").stdout
    assert "0 member tasks" in text and "no ReplicationTask names it in spec.runtime.applicationRef" in text
    # A task naming an application that does not exist is drawn with the others, naming it.
    assert "ReplicationTask default/elsewhere  Ready Running  application other" in federator("status").stdout


def test_the_report_holds_the_application_its_members_and_its_driver_log(
    kube: KubeServer, federator: Plugin, tmp_path: Path
) -> None:
    seed_application(kube)
    log = f"/api/v1/namespaces/default/pods/{APPLICATION}-driver/log"
    kube.call(lambda: kube.emulator["get", log] << b"task fast: batch 3 committed\n")
    bundle = tmp_path / "report.zip"
    federator("report", "-o", str(bundle))
    with zipfile.ZipFile(bundle) as archive:
        files = {name: archive.read(name).decode() for name in archive.namelist()}
    assert "resources/default/ReplicationApplication/shared.yaml" in files
    assert "resources/default/Pod/shared-driver.yaml" in files
    assert "task fast: batch 3 committed" in files["logs/spark/default/shared-driver.log"]
    [found] = json.loads(files["status.json"])["replicationApplications"]
    assert [m["name"] for m in found["members"]] == ["stuck", "archive", "fast"]
    assert "ReplicationApplication default/shared" in files["summary.txt"]
