"""The plugin as kubectl runs it: every command documents itself with an example, `graph` draws what the
cluster holds, `lag` sorts worst first, and the kubeconfig is read the way kubectl reads it."""

from __future__ import annotations

import json
import stat
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from plugin_helpers import Plugin
from plugin_seeds import create, plain_task, ready, seed_topology, task_status

from federator.kubectl.kubeconfig import KubeconfigError, load
from support.kube import KubeServer

COMMANDS = ("status", "lag", "failover", "failback", "report", "graph")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(federator: Plugin, command: str) -> None:
    text = federator(command, "--help").stdout
    assert "Usage: kubectl federator " + command in text
    assert "Example" in text and f"kubectl federator {command}" in text.split("Example", 1)[1]


def test_the_plugin_lists_its_commands(federator: Plugin) -> None:
    text = federator("--help").stdout
    assert all(command in text for command in COMMANDS)


def test_lag_is_sorted_worst_first(kube: KubeServer, federator: Plugin) -> None:
    seed_topology(kube)
    rows = json.loads(federator("lag", "-o", "json").stdout)
    assert [r["task"] for r in rows] == ["slow", "archive", "billing-west-east", "broken"]
    assert (rows[0]["secondsBehind"], rows[0]["eventsReplicated"], rows[0]["partition"]) == (95.0, 12, None)
    table = federator("lag").stdout.splitlines()
    assert table[0].split()[:4] == ["TASK", "PARTITION", "LAG", "BEHIND"]
    assert [line.split()[0] for line in table[1:]] == ["slow", "archive", "billing-west-east", "broken"]
    assert table[1].split()[2] == "95.0s" and "Stalled" in table[4]


def test_lag_has_a_row_per_source_partition_when_the_status_carries_them(
    kube: KubeServer, federator: Plugin
) -> None:
    partitions = [
        {"partition": "0", "eventsBehind": 0, "secondsBehind": 0.0},
        {"partition": "1", "eventsBehind": 40, "secondsBehind": 12.5},
        {"partition": "2", "eventsBehind": 3, "secondsBehind": 1.0},
    ]
    lag = {
        "eventsBehind": 43,
        "secondsBehind": 12.5,
        "rpoSeconds": 12.5,
        "worstPartition": "1",
        "partitions": partitions,
    }
    create(kube, plain_task("orders"), {**task_status(0.4, 500, ready("Running")), "lag": lag})
    rows = json.loads(federator("lag", "-o", "json").stdout)
    assert [(r["partition"], r["secondsBehind"], r["eventsBehind"]) for r in rows] == [
        ("1", 12.5, 40),
        ("2", 1.0, 3),
        ("0", 0.0, 0),
    ]
    table = federator("lag").stdout.splitlines()
    assert [line.split()[:4] for line in table[1:]] == [
        ["orders", "1", "12.5s", "40"],
        ["orders", "2", "1.0s", "3"],
        ["orders", "0", "0.0s", "0"],
    ]


def test_graph_draws_what_the_cluster_holds(kube: KubeServer, kubectl, federator: Plugin) -> None:  # type: ignore[no-untyped-def]
    kubectl("apply", "-f", "examples/failover-group.yaml")
    svg = ET.fromstring(federator("graph", "--format", "svg").stdout)
    ids = {g.get("id") for g in svg.iter("{http://www.w3.org/2000/svg}g")}
    assert {"group:default/orders", "task:default/orders-archive"} <= ids
    mermaid = federator("graph", "fg/orders").stdout
    assert mermaid.startswith("flowchart LR") and "ReplicationTask<br/>orders-archive" in mermaid
    offline = federator("graph", "-f", "examples/failover-group.yaml").stdout
    assert offline == mermaid, "the cluster's objects draw as their manifests do"


def test_kubeconfig_contexts_relative_paths_and_exec_plugins(kube: KubeServer, tmp_path: Path) -> None:
    plugin = tmp_path / "bin" / "get-token"
    plugin.parent.mkdir()
    plugin.write_text(
        f"#!{sys.executable}\nimport json, os\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
        " 'status': {'token': 'from-exec-' + os.environ['TENANT']}}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "token").write_text("from-file\n")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "files",
        "clusters": [{"name": "fake", "cluster": {"server": kube.url}}],
        "users": [
            {"name": "file", "user": {"tokenFile": "token"}},
            {
                "name": "exec",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "./bin/get-token",
                        "env": [{"name": "TENANT", "value": "contoso"}],
                    }
                },
            },
        ],
        "contexts": [
            {"name": "files", "context": {"cluster": "fake", "user": "file", "namespace": "payments"}},
            {"name": "aks", "context": {"cluster": "fake", "user": "exec"}},
        ],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    found = load(path)
    assert (found.context, found.namespace, found.connection.token) == ("files", "payments", "from-file")
    found = load(path, context="aks", namespace="orders")
    assert (found.namespace, found.connection.token) == ("orders", "from-exec-contoso")
    with pytest.raises(KubeconfigError, match="context 'nope' not found"):
        load(path, context="nope")


def test_a_refused_or_unreachable_server_is_one_clear_line(federator: Plugin, tmp_path: Path) -> None:
    config = tmp_path / "nowhere"
    config.write_text(
        yaml.safe_dump(
            {
                "current-context": "x",
                "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "x", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
            }
        )
    )
    done = federator("status", "--kubeconfig", str(config), check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot reach the API server http://127.0.0.1:9 (context x)")
    assert "Traceback" not in done.stderr
