"""`kubectl federator report`: a support bundle with our resources, their children, Events, operator and
Spark driver logs and the operator's metrics, in which no planted secret survives."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import zipfile
from pathlib import Path

import yaml
from plugin_helpers import Plugin, create, group_warning, one_line_error
from plugin_seeds import following_task, group, ready, task_status

from support.kube import K8sTools, KubeServer

OPERATOR_NS = "federator-system"
# A task config's secretEnv: which Secret key each environment variable holds. Names, not secrets.
ENV = {"weu-conn/connectionString": "FEDERATOR_SECRET_WEU_CONN_CONNECTIONSTRING"}
SB_KEY = "PLANTEDsbKEYweu0123456789abcdefABCDEF="
CLIENT_SECRET = "PLANTEDclientSecretXYZ987"
# Planted where secrets hide in practice; every one must be gone from the bundle.
SECRETS = [
    SB_KEY,
    CLIENT_SECRET,
    "PLANTEDcmKEY42",
    "PLANTEDannotationKEY",
    "PLANTEDpgPassword",
    "PLANTEDlogKEY",
    "PLANTEDjwtSig",
    "PLANTEDbearerTOKEN",
    "PLANTEDpw1",
    "PLANTEDeventKEY",
]


def connection_string(key: str) -> str:
    return f"Endpoint=sb://orders-weu.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={key}"


def serve_text(kube: KubeServer, path: str, text: str) -> None:
    """The API server's log and pod-proxy endpoints (the fake serves no pods' logs of its own)."""
    kube.call(lambda: kube.emulator["get", path] << text.encode())


def plant(kube: KubeServer, kubectl) -> None:  # type: ignore[no-untyped-def]
    # Applied with kubectl: its last-applied-configuration annotation repeats the Secret's values.
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "weu-conn", "namespace": "default"},
        "stringData": {"connectionString": connection_string(SB_KEY)},
    }
    kubectl("apply", "-f", "-", input=yaml.safe_dump(secret))
    sp = {"tenantId": "t", "clientId": "c", "clientSecret": CLIENT_SECRET}
    create(kube, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dns-sp"}, "stringData": sp})
    dns = {
        "zone": {
            "subscriptionId": "00000000-0000-0000-0000-000000000000",
            "resourceGroup": "dns",
            "zoneName": "federator.test",
            "credential": {"servicePrincipalSecretRef": {"name": "dns-sp"}},
        },
        "producerRecordName": "orders-send",
        "consumerRecordName": "orders-receive",
    }
    create(kube, group(publishing={"dns": dns}), {"phase": "Normal", "conditions": ready("Active")})
    task = following_task()
    task["metadata"]["annotations"] = {
        "example.com/source": connection_string("PLANTEDannotationKEY"),
        "example.com/db": "postgresql://app:PLANTEDpgPassword@db:5432/orders",
    }
    create(kube, task, task_status(3.0, 10, ready("Running")))
    labels = {"app.kubernetes.io/managed-by": "federator", "federator.io/replication-task": "archive"}
    config = {
        "conn": connection_string("PLANTEDcmKEY42"),
        "task.json": json.dumps({"spec": {}, "secretEnv": ENV}),
    }
    create(
        kube,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "archive-task", "labels": labels},
            "data": config,
        },
    )
    message = f"probe with {connection_string('PLANTEDeventKEY')} failed"
    create(kube, group_warning("orders.1", "MemberUnhealthy", message))
    driver = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "archive-driver", "labels": {**labels, "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "federator"}]},
    }
    create(kube, driver, {"phase": "Running"})
    operator = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "federator-abc",
            "namespace": OPERATOR_NS,
            "labels": {"app.kubernetes.io/name": "federator", "app.kubernetes.io/component": "operator"},
        },
        "spec": {
            "containers": [
                {
                    "name": "operator",
                    "image": "federator",
                    "ports": [{"name": "metrics", "containerPort": 9090}],
                }
            ]
        },
    }
    create(kube, operator, {"phase": "Running"})
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmZWRlcmF0b3IifQ.PLANTEDjwtSig"
    serve_text(
        kube,
        f"/api/v1/namespaces/{OPERATOR_NS}/pods/federator-abc/log",
        f"INFO probing with {connection_string('PLANTEDlogKEY')}\nDEBUG token {jwt}\n"
        f"DEBUG dns credential {CLIENT_SECRET}\nINFO reconciled default/orders\n",
    )
    serve_text(
        kube,
        "/api/v1/namespaces/default/pods/archive-driver/log",
        "Authorization: Bearer PLANTEDbearerTOKEN\npostgres password=PLANTEDpw1\nbatch 7 committed\n",
    )
    serve_text(
        kube,
        f"/api/v1/namespaces/{OPERATOR_NS}/pods/federator-abc:9090/proxy/metrics",
        'federator_failovers_total{namespace="default",group="orders",from="weu",to="neu"} 1.0\n',
    )


def test_the_bundle_has_what_support_needs_and_no_secret(
    kube: KubeServer, kubectl, federator: Plugin, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    plant(kube, kubectl)
    bundle = tmp_path / "report.zip"
    done = federator("report", "-o", str(bundle))
    assert f"wrote {bundle}" in done.stderr
    with zipfile.ZipFile(bundle) as archive:
        files = {name: archive.read(name).decode() for name in archive.namelist()}
    for expected in (
        "README.txt",
        "summary.txt",
        "status.json",
        "lag.json",
        "resources/default/FailoverGroup/orders.yaml",
        "resources/default/ReplicationTask/archive.yaml",
        "resources/default/ConfigMap/archive-task.yaml",
        "resources/default/Pod/archive-driver.yaml",
        "resources/default/Secret/weu-conn.yaml",
        "resources/default/Secret/dns-sp.yaml",
        f"resources/{OPERATOR_NS}/Pod/federator-abc.yaml",
        "events/default.yaml",
        f"logs/operator/{OPERATOR_NS}/federator-abc.log",
        "logs/spark/default/archive-driver.log",
        f"metrics/operator/{OPERATOR_NS}/federator-abc.txt",
    ):
        assert expected in files, f"{expected} missing from {sorted(files)}"
    everything = "\n".join(files.values())
    for planted in SECRETS:
        encoded = base64.b64encode(planted.encode()).decode()
        assert planted not in everything and encoded not in everything, f"{planted} leaked"
    assert "PLANTED" not in everything
    # Redacted, not dropped: the files keep what support needs around the markers.
    secret = yaml.safe_load(files["resources/default/Secret/weu-conn.yaml"])
    assert secret["stringData"] == {"connectionString": "[REDACTED]"}  # the fake keeps stringData as sent
    assert (
        '"connectionString":"[REDACTED]"'
        in secret["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert yaml.safe_load(files["resources/default/Secret/dns-sp.yaml"])["stringData"] == dict.fromkeys(
        ("clientId", "clientSecret", "tenantId"), "[REDACTED]"
    )
    task_config = yaml.safe_load(files["resources/default/ConfigMap/archive-task.yaml"])["data"]
    assert task_config["conn"] == "[REDACTED:connection-string]"
    assert json.loads(task_config["task.json"])["secretEnv"] == ENV, "variable names are kept"
    assert (
        "postgresql://app:[REDACTED]@db:5432/orders"
        in files["resources/default/ReplicationTask/archive.yaml"]
    )
    operator_log = files[f"logs/operator/{OPERATOR_NS}/federator-abc.log"]
    assert (
        "[REDACTED:secret/dns-sp/clientSecret]" in operator_log
        and "INFO reconciled default/orders" in operator_log
    )
    assert "[REDACTED:jwt]" in operator_log
    assert "batch 7 committed" in files["logs/spark/default/archive-driver.log"]
    assert "MemberUnhealthy" in files["events/default.yaml"]
    assert (
        'federator_failovers_total{namespace="default"'
        in files[f"metrics/operator/{OPERATOR_NS}/federator-abc.txt"]
    )
    assert "FailoverGroup default/orders" in files["summary.txt"]
    assert "Not collected" not in files["README.txt"]


def test_where_the_bundle_goes(
    kube: KubeServer,
    federator: Plugin,
    k8s_tools: K8sTools,
    plugin_environment: dict[str, str],
    tmp_path: Path,
) -> None:
    create(kube, following_task(), task_status(3.0, 10, ready("Running")))
    # A missing directory is an error, never created.
    missing = tmp_path / "missing" / "x.zip"
    one_line_error(
        federator("report", "-o", str(missing), check=False), f"the directory {missing.parent} does not exist"
    )
    assert not missing.parent.exists()
    # A directory gets a file named by the time, and nothing beside it.
    folder = tmp_path / "bundles"
    folder.mkdir()
    done = federator("report", "-o", str(folder))
    [written] = folder.iterdir()
    assert written.name.startswith("federator-report-") and written.suffix == ".zip"
    assert f"wrote {written}" in done.stderr and zipfile.is_zipfile(written)
    # `-`: the zip on standard output, for a pipe.
    piped = subprocess.run(
        [str(k8s_tools.kubectl), "federator", "report", "-o", "-"],
        capture_output=True,
        env=plugin_environment,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    with zipfile.ZipFile(io.BytesIO(piped.stdout)) as archive:
        assert "resources/default/ReplicationTask/archive.yaml" in archive.namelist()
    assert not (tmp_path / "-").exists()
