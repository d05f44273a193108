"""Which Spark application runs a task in a local run: the tasks naming a ReplicationApplication share one
host with the application's Spark settings, a mirror's tasks share one, a task that follows a group gets a
host of its own, any other task an application of its own. A running host is handed a task by writing its
config: a task that joins or moves starts only its query, and only a task needing what the host was not
started with (a secret, a Spark setting) starts the application again. The hosts here are stand-in
processes: no JVM starts."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator import reasons
from federator.local import apps, supervisor
from federator.local.apps import home_of
from federator.local.groups import group_object
from federator.local.model import LocalPlan, TaskRun
from federator.local.plan import plan_local_run
from federator.local.session import LocalSession
from federator.local.state import StateDir
from federator.local.supervisor import ManagedProcess
from federator.validation.documents import Document, load_documents
from federator_contract.api.failovergroup import FailoverGroupStatus

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plan_of(tmp_path: Path, documents: Sequence[Document]) -> LocalPlan:
    return plan_local_run(documents, state=StateDir(tmp_path / "state"), environ={})


def example(name: str) -> list[Document]:
    return list(load_documents(EXAMPLES / name))


SHARED = """
apiVersion: federator.io/v1alpha1
kind: ReplicationApplication
metadata: {name: replication}
spec:
  sparkConf: {spark.sql.shuffle.partitions: "4"}
  scheduling: {mode: FAIR}
"""
MEMBER = """
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {name: %(hub)s-replication}
spec:
  source: {eventHub: {connection: {emulator: {namespace: primary}}, eventHubName: %(hub)s}}
  targets:
    - {name: secondary, eventHub: {connection: {emulator: {namespace: secondary}}, eventHubName: %(hub)s}}
  runtime:
    applicationRef: {name: replication}
"""


def document(text: str) -> Document:
    return Document("shared.yaml", 0, yaml.safe_load(text))


def shared_example() -> tuple[Document, list[Document]]:
    """A ReplicationApplication, and two tasks naming it."""
    return document(SHARED), [document(MEMBER % {"hub": hub}) for hub in ("orders", "telemetry")]


def renamed(document: Document, *, namespace: str | None = None, application: str | None = None) -> Document:
    body: dict[str, Any] = yaml.safe_load(yaml.safe_dump(document.body))
    if namespace is not None:
        body["metadata"]["namespace"] = namespace
    if application is not None:
        body["spec"]["runtime"]["applicationRef"]["name"] = application
    return dataclasses.replace(document, body=body)


# ------------------------------------------------------------------------------------------------ planning


def test_tasks_naming_one_application_share_its_host_and_its_spark_settings(tmp_path: Path) -> None:
    application, tasks = shared_example()

    plan = plan_of(tmp_path, [application, *tasks])

    state = StateDir(tmp_path / "state")
    assert [t.application for t in plan.tasks] == ["default/replication", "default/replication"]
    [home] = {home_of(t, state) for t in plan.tasks}
    assert home.hosted and home.directory == state.application_dir("default", "replication")
    for task in plan.tasks:
        assert task.spark_conf["spark.sql.shuffle.partitions"] == "4"  # the application's sparkConf
        assert task.spark_conf["spark.scheduler.mode"] == "FAIR"  # its scheduling
    assert not plan.blocked and not plan.notes


def test_a_task_may_come_before_the_application_it_names(tmp_path: Path) -> None:
    application, tasks = shared_example()

    plan = plan_of(tmp_path, [*tasks, application])

    assert [t.application for t in plan.tasks] == ["default/replication", "default/replication"]
    assert not plan.blocked


def test_a_task_naming_an_application_not_among_the_files_is_stalled_at_the_field(tmp_path: Path) -> None:
    application, tasks = shared_example()

    plan = plan_of(tmp_path, [application, tasks[0], renamed(tasks[1], application="elsewhere")])

    [blocked] = plan.blocked
    assert (blocked.key, blocked.reason) == ("default/telemetry-replication", reasons.APPLICATION_NOT_FOUND)
    assert blocked.message.startswith(
        "spec.runtime.applicationRef.name: ReplicationApplication default/elsewhere"
    )
    assert [t.name for t in plan.tasks] == ["orders-replication"]


def test_a_task_cannot_join_an_application_of_another_namespace(tmp_path: Path) -> None:
    application, tasks = shared_example()

    plan = plan_of(tmp_path, [application, renamed(tasks[0], namespace="tenant-b")])

    assert [(b.key, b.reason) for b in plan.blocked] == [
        ("tenant-b/orders-replication", reasons.APPLICATION_NOT_FOUND)
    ]


def test_a_mirrors_tasks_share_one_host_by_default(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, example("sb-all-active.yaml"))

    homes = {home_of(t, StateDir(tmp_path / "state")) for t in plan.tasks}
    assert len(plan.tasks) > 1 and len(homes) == 1
    assert next(iter(homes)).hosted


def test_a_task_following_a_group_gets_a_host_of_its_own_and_any_other_task_an_application(
    tmp_path: Path,
) -> None:
    plan = plan_of(tmp_path, example("failover-group.yaml"))
    [follower], [group] = plan.following, plan.groups
    [plain] = plan_of(tmp_path, example("eh-replication.yaml")).tasks
    status = FailoverGroupStatus(producer_member="primary", consumer_member="primary")

    run = follower.replan({"orders": group_object(group, status)})

    state = StateDir(tmp_path / "state")
    assert isinstance(run, TaskRun)
    assert home_of(run, state) == apps.Home(
        "default/orders-archive", state.task_dir("default", "orders-archive"), True
    )
    assert not home_of(plain, state).hosted


# ------------------------------------------------------------------------------------------------- running

IDLE = "import time; time.sleep(120)"
READY = {
    "namespaces": {
        name: {
            "connectionString": f"Endpoint=sb://localhost/;SharedAccessKeyName=k;SharedAccessKey=not-{name}"
        }
        for name in ("primary", "secondary")
    }
}


@pytest.fixture
def launched() -> dict[int, list[str]]:
    """Stand-in process id → the command line local mode asked for."""
    return {}


@pytest.fixture
def session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launched: dict[int, list[str]]
) -> Iterator[LocalSession]:
    """The session of two tasks sharing an application; each application a stand-in process."""

    def spawn(name: str, argv: Sequence[str], env: Any, log_path: Path, records: Path) -> ManagedProcess:
        process = supervisor.spawn(name, [sys.executable, "-c", IDLE], env, log_path, records=records)
        launched[process.pid] = list(argv)
        return process

    monkeypatch.setattr(apps, "spawn", spawn)
    state = StateDir(tmp_path / "state")
    application, tasks = shared_example()
    plan = plan_of(tmp_path, [application, *tasks])
    local = LocalSession(plan, state, {})
    local.ready = READY
    local.pending = list(plan.tasks)
    yield local
    local.stop()


def linked_configs(task_dir: Path) -> dict[str, Path]:
    return {link.name: link.resolve() for link in task_dir.iterdir() if not link.name.startswith(".")}


def test_an_applications_tasks_start_in_one_host_watching_their_configs(
    session: LocalSession, launched: dict[int, list[str]]
) -> None:
    session.reconcile()

    [app] = session.apps
    assert app.home is not None and app.name == "application default/replication"
    assert launched[app.process.pid][1:5] == [
        "-m",
        "federator_spark.host",
        "--task-dir",
        str(app.home.task_dir),
    ]
    state = session.state
    assert linked_configs(app.home.task_dir) == {
        f"default_{name}.json": state.task_config("default", name).resolve()
        for name in ("orders-replication", "telemetry-replication")
    }


def test_a_task_that_moves_rewrites_only_its_config_and_the_host_goes_on(session: LocalSession) -> None:
    session.reconcile()
    [app] = session.apps
    pid, moving = app.process.pid, session.plan.tasks[0]
    config = moving.task_config.model_copy(update={"metrics_port": 9999})

    moved = dataclasses.replace(moving, task_config=config)
    session.run_task(moved, "a followed group switched to orders/secondary")

    assert [a.process.pid for a in session.apps] == [pid] and app.restart is None
    written = json.loads(session.state.task_config("default", "orders-replication").read_text())
    assert written["metricsPort"] == 9999
    row = next(r for r in session.rows() if r.key == moving.key)
    assert (row.condition, row.reason) == ("Reconciling", reasons.FOLLOWED_MEMBER_SWITCHING)
    assert "a followed group switched to orders/secondary" in row.message


def test_a_task_needing_a_secret_the_host_lacks_starts_the_application_again(session: LocalSession) -> None:
    session.reconcile()
    [app] = session.apps
    joining = dataclasses.replace(session.plan.tasks[0], secret_env={"FEDERATOR_SECRET_X": "value"})

    session.run_task(joining, "a followed group switched to orders/secondary")

    assert app.restart is not None and app.process.stop_requested
    row = next(r for r in session.rows() if r.key == joining.key)
    assert (row.condition, row.reason) == ("Reconciling", reasons.SPARK_APPLICATION_RESTARTING)
