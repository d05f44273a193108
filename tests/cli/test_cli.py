"""The `federator` command: CRDs, validation exit codes, and honest refusals for what is not built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from federator.cli.main import app
from federator.crds.generate import render_all

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_crds_prints_exactly_the_crds_directory() -> None:
    result = runner.invoke(app, ["crds"])
    assert result.exit_code == 0
    printed = [d for d in yaml.safe_load_all(result.stdout) if d]
    on_disk = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "crds").glob("*.yaml"))]
    key = lambda d: d["metadata"]["name"]  # noqa: E731
    assert sorted(printed, key=key) == sorted(on_disk, key=key)


def test_crds_writes_one_file_per_kind(tmp_path: Path) -> None:
    result = runner.invoke(app, ["crds", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == render_all()


def test_validate_accepts_the_examples() -> None:
    result = runner.invoke(app, ["validate", *map(str, sorted((ROOT / "examples").glob("*.yaml")))])
    assert result.exit_code == 0, result.stdout
    assert " 0 invalid" in result.stdout


def test_validate_fails_and_prints_the_field_path() -> None:
    bad = ROOT / "tests" / "manifests" / "invalid" / "two-sources.yaml"
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 1
    assert "spec.source: exactly one of eventHub, serviceBus must be set" in result.stdout


def test_validate_reports_a_missing_file_without_crashing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1
    assert "cannot read" in result.stdout


def test_run_refuses_a_missing_manifest_before_starting_anything(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "-f", str(tmp_path / "nope.yaml"), "--state-dir", str(tmp_path / "s")]
    )
    assert result.exit_code != 0
    assert "cannot read" in result.output
    assert not (tmp_path / "s").exists()


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "federator"
    completed = subprocess.run(
        [str(exe), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0 and completed.stdout.strip() == "0.1.0"


def test_render_prints_the_children_of_a_task() -> None:
    result = runner.invoke(app, ["render", "-f", str(ROOT / "examples" / "eh-replication-cluster.yaml")])
    assert result.exit_code == 0, result.stderr
    objects = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert [(o["apiVersion"], o["kind"]) for o in objects] == [
        ("v1", "ConfigMap"),
        ("sparkoperator.k8s.io/v1beta2", "SparkApplication"),
    ]


def test_render_with_the_apache_launcher() -> None:
    path = ROOT / "examples" / "eh-replication-cluster.yaml"
    # The task chooses kubeflow itself; the operator-wide default applies only to tasks that do not.
    result = runner.invoke(app, ["render", "--launcher", "apache", "-f", str(path)])
    assert result.exit_code == 0
    assert "sparkoperator.k8s.io/v1beta2" in result.stdout


def test_render_explains_what_cannot_run_in_a_cluster() -> None:
    result = runner.invoke(app, ["render", "-f", str(ROOT / "examples" / "eh-replication.yaml")])
    assert result.exit_code == 1
    assert "EmulatorOnlyInLocalMode" in result.stderr


def test_render_prints_a_mirrors_tasks_and_its_service_bus_plan_as_comments() -> None:
    result = runner.invoke(app, ["render", "-f", str(ROOT / "examples" / "sb-all-active-cluster.yaml")])
    assert result.exit_code == 0, result.stderr
    objects = [d for d in yaml.safe_load_all(result.stdout) if d]
    # The pairs' tasks, and the ReplicationApplication the mirror owns for them to share.
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("ReplicationApplication", "payments"),
        ("ReplicationTask", "payments-neu-weu"),
        ("ReplicationTask", "payments-weu-neu"),
    ]
    assert "#       sqlFilter: replication IS NULL" in result.stdout


def test_render_prints_the_endpoints_a_failover_group_publishes() -> None:
    result = runner.invoke(app, ["render", "-f", str(ROOT / "examples" / "failover-group.yaml")])
    # The group renders; the task that follows it can only be planned by the operator, which reads it.
    assert result.exit_code == 1 and "FailoverGroupFollowingNotAvailable" in result.stderr
    (config_map,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert config_map["metadata"]["name"] == "orders-endpoints"
    assert config_map["data"] == {
        "phase": "Normal",
        "primaryMember": "primary",
        "producerMember": "primary",
        "producerEndpoint": "localhost",
        "producerSince": "<the time of the switch>",
        "consumerMember": "primary",
        "consumerEndpoint": "localhost",
        "consumerSince": "<the time of the switch>",
    }


def test_render_shows_a_groups_dns_records_as_comments(tmp_path: Path) -> None:
    path = tmp_path / "group.yaml"
    path.write_text(FAILOVER_GROUP_WITH_DNS)
    result = runner.invoke(app, ["render", "-f", str(path)])
    assert result.exit_code == 0, result.stderr
    assert (
        "#   - name: orders-send\n#     type: CNAME\n#     ttl: 30\n#     cname: neu.messaging.contoso.com"
        in (result.stdout)
    )
    assert "#       target: contoso-weu.servicebus.windows.net" in result.stdout
    (config_map,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert config_map["data"]["producerMember"] == "neu" and config_map["data"]["phase"] == "FailedOver"
    assert config_map["data"]["producerSecretRef"] == "orders-neu/connectionString"


FAILOVER_GROUP_WITH_DNS = """\
apiVersion: federator.io/v1alpha1
kind: FailoverGroup
metadata: {name: orders, namespace: messaging}
spec:
  primaryMember: weu
  activeMember: neu
  members:
    - {name: weu, endpoint: contoso-weu.servicebus.windows.net, connection: {secretRef: {name: orders-weu}}}
    - {name: neu, endpoint: contoso-neu.servicebus.windows.net, connection: {secretRef: {name: orders-neu}}}
  probe: {entity: {queueName: orders}}
  publishing:
    dns:
      zone:
        subscriptionId: 0b1f6471-1bf0-4dda-aec3-cb9272f09590
        resourceGroup: dns
        zoneName: messaging.contoso.com
        credential: {servicePrincipalSecretRef: {name: dns-writer}}
      producerRecordName: orders-send
      consumerRecordName: orders-receive
"""


def test_render_refuses_an_unknown_launcher() -> None:
    path = ROOT / "examples" / "eh-replication-cluster.yaml"
    result = runner.invoke(app, ["render", "--launcher", "yarn", "-f", str(path)])
    assert result.exit_code == 2
    assert "FEDERATOR_LAUNCHER='yarn'" in result.stderr


def test_operator_needs_to_be_told_what_to_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEDERATOR_NAMESPACES", raising=False)
    monkeypatch.delenv("FEDERATOR_ALL_NAMESPACES", raising=False)
    result = runner.invoke(app, ["operator"])
    assert result.exit_code == 2
    assert "--namespace" in result.stderr
