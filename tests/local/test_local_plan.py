"""Planning a local run: manifests → the emulator it starts, the task configs it runs, and what cannot run
(with the Stalled reason a cluster would show). Pure: no process starts."""

from __future__ import annotations

import base64
import itertools
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator import reasons
from federator.local.apps import app_environment
from federator.local.plan import LocalPlan, plan_local_run, with_emulator_connections
from federator.local.state import StateDir
from federator.validation.documents import Document, load_documents
from federator_contract.emulatorconfig import EmulatorConfig
from federator_contract.sparkconf import APP_SPARK_CONF

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def plan_files(
    tmp_path: Path, *names: str, environ: dict[str, str] | None = None, **options: Any
) -> LocalPlan:
    documents = [d for name in names for d in load_documents(EXAMPLES / name)]
    return plan_local_run(documents, state=StateDir(tmp_path / "state"), environ=environ or {}, **options)


def plan_yaml(tmp_path: Path, text: str, environ: dict[str, str] | None = None, **options: Any) -> LocalPlan:
    documents = [Document("test.yaml", i, body) for i, body in enumerate(yaml.safe_load_all(text))]
    return plan_local_run(documents, state=StateDir(tmp_path / "state"), environ=environ or {}, **options)


def hubs(plan: LocalPlan) -> dict[str, dict[str, tuple[int, list[str]]]]:
    assert plan.emulator is not None
    return {
        ns.name: {h.name: (h.partition_count, h.consumer_groups) for h in ns.event_hubs}
        for ns in plan.emulator.namespaces
    }


def task(source: str, *targets: str, name: str = "t", extra: str = "") -> str:
    """A ReplicationTask manifest; endpoints as YAML flow mappings."""
    lines = "\n".join(f"    - {{name: t{i}, {t}}}" for i, t in enumerate(targets))
    return f"""
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {{name: {name}}}
spec:
  source: {source}
  targets:
{lines}
{extra}
"""


EH = "eventHub: {{connection: {{emulator: {{namespace: {ns}}}}}, eventHubName: {hub}}}"
SECRET_SOURCE = "{eventHub: {connection: {secretRef: {name: src}}, eventHubName: orders}}"
EMULATOR_TARGET = EH.format(ns="b", hub="orders")


# ------------------------------------------------------------------------------------- emulator derivation


def test_the_emulator_holds_every_namespace_and_event_hub_the_example_names(tmp_path: Path) -> None:
    plan = plan_files(tmp_path, "eh-replication.yaml")

    assert hubs(plan) == {"primary": {"orders": (4, ["replication"])}, "secondary": {"orders": (4, [])}}
    assert [t.key for t in plan.tasks] == ["default/orders-replication"]
    assert plan.tasks[0].emulator_namespaces == ("primary", "secondary")
    assert not plan.blocked and not plan.failed


def test_queues_and_topics_are_derived_and_effectively_once_turns_on_duplicate_detection(
    tmp_path: Path,
) -> None:
    target = "serviceBus: {connection: {emulator: {namespace: b}}, queueName: jobs}"
    topic = "serviceBus: {connection: {emulator: {namespace: b}}, topicName: audit}"
    text = task(
        "{" + EH.format(ns="a", hub="in") + "}", target, topic, extra="  delivery: {effectivelyOnce: true}"
    )

    plan = plan_yaml(tmp_path, text)

    assert plan.emulator is not None
    b = next(ns for ns in plan.emulator.namespaces if ns.name == "b")
    assert [(q.name, q.requires_duplicate_detection) for q in b.queues] == [("jobs", True)]
    assert [(t.name, t.requires_duplicate_detection) for t in b.topics] == [("audit", True)]


def test_a_service_bus_source_gets_its_subscription(tmp_path: Path) -> None:
    source = "{serviceBus: {connection: {emulator: {namespace: a}}, topicName: audit, subscriptionName: out}}"
    plan = plan_yaml(tmp_path, task(source, EH.format(ns="a", hub="audit-stream")))

    assert plan.emulator is not None
    (a,) = plan.emulator.namespaces
    assert [(t.name, [s.name for s in t.subscriptions]) for t in a.topics] == [("audit", ["out"])]
    assert [h.name for h in a.event_hubs] == ["audit-stream"]


def test_a_declared_emulator_config_wins_and_gains_what_the_tasks_need(tmp_path: Path) -> None:
    declared = EmulatorConfig.model_validate(
        {
            "fsync": False,
            "namespaces": [
                {"name": "primary", "eventHubs": [{"name": "orders", "partitionCount": 8}]},
                {"name": "spare", "queues": [{"name": "q"}]},
            ],
        }
    )

    plan = plan_files(tmp_path, "eh-replication.yaml", emulator_config=declared)

    assert hubs(plan) == {
        "primary": {"orders": (8, ["replication"])},
        "spare": {},
        "secondary": {"orders": (4, [])},
    }
    assert plan.emulator is not None and plan.emulator.fsync is False
    assert declared.namespaces[0].event_hubs[0].consumer_groups == []  # the caller's config is not changed


def test_one_emulator_namespace_cannot_hold_an_event_hub_and_a_queue_of_one_name(tmp_path: Path) -> None:
    queue = "serviceBus: {connection: {emulator: {namespace: a}}, queueName: jobs}"
    plan = plan_yaml(tmp_path, task("{" + EH.format(ns="a", hub="jobs") + "}", queue))

    (blocked,) = plan.blocked
    assert blocked.reason == reasons.EMULATOR_ENTITY_CONFLICT
    assert "cannot hold both event hub 'jobs' and queue 'jobs'" in blocked.message
    assert plan.emulator is None  # nothing of a blocked task is laid out


def test_a_later_task_that_conflicts_is_blocked_and_the_first_runs(tmp_path: Path) -> None:
    first = task("{" + EH.format(ns="a", hub="in") + "}", EH.format(ns="a", hub="jobs"), name="first")
    queue = "serviceBus: {connection: {emulator: {namespace: a}}, queueName: jobs}"
    second = task("{" + EH.format(ns="a", hub="in") + "}", queue, name="second")

    plan = plan_yaml(tmp_path, first + "---" + second)

    assert [t.name for t in plan.tasks] == ["first"]
    assert [(b.name, b.reason) for b in plan.blocked] == [("second", reasons.EMULATOR_ENTITY_CONFLICT)]


# ------------------------------------------------------------------------------------- task configs


def test_the_task_config_keeps_checkpoints_and_status_in_the_state_dir(tmp_path: Path) -> None:
    plan = plan_files(tmp_path, "eh-replication.yaml")
    config = json.loads(plan.tasks[0].task_config.to_json())  # as the app reads it
    task_dir = (tmp_path / "state" / "tasks" / "default" / "orders-replication").resolve()

    assert config["checkpointLocation"] == f"file://{task_dir / 'checkpoint'}"
    assert config["statusFile"] == str(task_dir / "status.json")
    assert "metricsPort" not in config
    assert config["spec"]["delivery"] == {"effectivelyOnce": True}
    assert config["metadata"] == {"name": "orders-replication", "namespace": "default"}


def test_emulator_connections_are_named_by_file_for_the_tasks_own_namespaces(tmp_path: Path) -> None:
    plan = plan_files(tmp_path, "eh-replication.yaml")
    known = {ns: tmp_path / "connections" / ns for ns in ("primary", "secondary", "x")}

    config = with_emulator_connections(plan.tasks[0], known)

    assert config.emulator_connection_files == {
        "primary": str(known["primary"].resolve()),
        "secondary": str(known["secondary"].resolve()),
    }


def test_metrics_ports_count_up_from_the_first(tmp_path: Path) -> None:
    plan = plan_files(tmp_path, "eh-merge.yaml", metrics_port=9500)

    assert [t.task_config.metrics_port for t in plan.tasks] == [9500, 9501]


def test_the_app_gets_a_clusters_spark_settings_and_the_tasks_own_through_spark_submit(
    tmp_path: Path,
) -> None:
    own = '  runtime: {sparkConf: {spark.executor.extraJavaOptions: "-Dx=1"}}'
    plan = plan_yaml(tmp_path, task("{" + EH.format(ns="a", hub="orders") + "}", EMULATOR_TARGET, extra=own))

    arguments = shlex.split(app_environment(plan.tasks, {}, tmp_path)["PYSPARK_SUBMIT_ARGS"])
    conf = dict(value.split("=", 1) for flag, value in itertools.pairwise(arguments) if flag == "--conf")
    assert {key: conf[key] for key in APP_SPARK_CONF} == APP_SPARK_CONF
    assert conf["spark.executor.extraJavaOptions"] == "-Dx=1"


# ------------------------------------------------------------------------------------- secrets


def secret(key: str, value: str, field: str = "stringData") -> str:
    encoded = base64.b64encode(value.encode()).decode() if field == "data" else value
    return f"---\napiVersion: v1\nkind: Secret\nmetadata: {{name: src}}\n{field}: {{{key}: '{encoded}'}}\n"


@pytest.mark.parametrize("field", ["stringData", "data"])
def test_a_secret_document_provides_the_value_through_the_apps_environment_only(
    tmp_path: Path, field: str
) -> None:
    value = "Endpoint=sb://example.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=s3cr3t"
    plan = plan_yaml(
        tmp_path, task(SECRET_SOURCE, EMULATOR_TARGET) + secret("connectionString", value, field)
    )

    (run,) = plan.tasks
    assert run.secret_env == {"FEDERATOR_SECRET_src__connectionString": value}
    assert run.task_config.secret_env == {"src/connectionString": "FEDERATOR_SECRET_src__connectionString"}
    assert "s3cr3t" not in run.task_config.to_json() and "s3cr3t" not in repr(run)


def test_an_environment_variable_wins_over_the_secret_document(tmp_path: Path) -> None:
    environ = {"FEDERATOR_SECRET_src__connectionString": "Endpoint=sb://from-env"}
    plan = plan_yaml(tmp_path, task(SECRET_SOURCE, EMULATOR_TARGET) + secret("other", "x"), environ=environ)

    (run,) = plan.tasks
    assert run.secret_env == {}  # the app inherits the variable


def test_a_missing_secret_stalls_the_task_and_says_both_ways_to_provide_it(tmp_path: Path) -> None:
    plan = plan_yaml(tmp_path, task(SECRET_SOURCE, EMULATOR_TARGET))

    (blocked,) = plan.blocked
    assert blocked.reason == reasons.SECRET_NOT_FOUND
    assert "Secret default/src" in blocked.message
    assert "FEDERATOR_SECRET_src__connectionString" in blocked.message
    assert plan.failed and not plan.tasks


def test_a_secret_without_the_key_stalls_the_task(tmp_path: Path) -> None:
    plan = plan_yaml(tmp_path, task(SECRET_SOURCE, EMULATOR_TARGET) + secret("other", "x"))

    (blocked,) = plan.blocked
    assert blocked.reason == reasons.SECRET_KEY_NOT_FOUND
    assert "has no key 'connectionString'" in blocked.message


def test_a_secret_that_is_not_base64_stalls_the_task_without_repeating_it(tmp_path: Path) -> None:
    text = task(SECRET_SOURCE, EMULATOR_TARGET) + secret("connectionString", "not base64!", "stringData")
    text = text.replace("stringData", "data")

    (blocked,) = plan_yaml(tmp_path, text).blocked

    assert blocked.reason == reasons.SECRET_KEY_NOT_FOUND
    assert "not valid base64" in blocked.message and "not base64!" not in blocked.message


# ------------------------------------------------------------------------------------- config maps


def test_config_map_keys_an_editor_reads_become_files_in_the_state_dir(tmp_path: Path) -> None:
    plan = plan_files(tmp_path, "eh-editor-chain.yaml")

    (run,) = plan.tasks
    expected = (
        tmp_path / "state/tasks/default/payments-curated/config-maps/merchant-regions/regions.json"
    ).resolve()
    assert run.task_config.config_map_files == {"merchant-regions/regions.json": str(expected)}
    assert run.files == {expected: b'{"m-001": "eu", "m-002": "us"}'}
    assert run.secret_env == {"FEDERATOR_SECRET_payments_signing_key__hmacKey": "local-demo-key-change-me"}


def test_a_missing_config_map_stalls_the_task(tmp_path: Path) -> None:
    text = (
        (EXAMPLES / "eh-editor-chain.yaml")
        .read_text()
        .replace("name: merchant-regions\n", "name: elsewhere\n")
    )

    (blocked,) = plan_yaml(tmp_path, text).blocked

    assert blocked.reason == reasons.CONFIG_MAP_NOT_FOUND
    assert "ConfigMap default/merchant-regions is not among the manifest files" in blocked.message


# ------------------------------------------------------------------------------------- what cannot run


def test_an_invalid_spec_is_stalled_with_its_field_path(tmp_path: Path) -> None:
    text = task("{" + EH.format(ns="a", hub="in") + "}", "condition: 'region ==', " + EMULATOR_TARGET)

    (blocked,) = plan_yaml(tmp_path, text).blocked

    assert blocked.reason == reasons.INVALID_SPEC
    assert blocked.message.startswith("spec.targets[0].condition: invalid SQL condition")


def test_a_task_defined_twice_runs_once(tmp_path: Path) -> None:
    one = task("{" + EH.format(ns="a", hub="in") + "}", EMULATOR_TARGET)

    plan = plan_yaml(tmp_path, one + "---" + one)

    assert len(plan.tasks) == 1
    assert [b.reason for b in plan.blocked] == [reasons.INVALID_SPEC]


def test_other_kubernetes_objects_are_skipped_without_failing(tmp_path: Path) -> None:
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n" + task(
        "{" + EH.format(ns="a", hub="in") + "}", EMULATOR_TARGET
    )

    plan = plan_yaml(tmp_path, text)

    assert [n.message for n in plan.notes] == ["skipped: not a federator.io resource"]
    assert not plan.failed


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_runs_locally_or_is_a_cluster_example(tmp_path: Path, example: str) -> None:
    plan = plan_files(tmp_path, example)

    if example.endswith("-cluster.yaml"):  # its Secrets live in the cluster: local mode says which
        found = [b.reason for b in plan.blocked] + [n.message.split(":")[0] for n in plan.notes]
        # (and a task that follows a group blocked that way says the group is not there)
        assert found and set(found) <= {reasons.SECRET_NOT_FOUND, reasons.FAILOVER_GROUP_NOT_FOUND}
    else:
        assert not plan.blocked and not plan.notes and plan.runnable
