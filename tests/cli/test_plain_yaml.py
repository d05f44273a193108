"""Every YAML document Federator prints is plain: no anchors or aliases (`&id001`, `*id001`), which GitOps
reviewers and diff tools do not expect. PyYAML writes them whenever one object appears twice."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from federator import plainyaml
from federator.cli.main import app
from federator.kubectl import output

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def anchors_and_aliases(text: str) -> list[str]:
    """Every anchor or alias in ``text``, read from the YAML parser's events."""
    return [f"{type(e).__name__} {e.anchor}" for e in yaml.parse(text) if getattr(e, "anchor", None)]


def test_a_shared_object_is_written_out_in_full_wherever_it_appears() -> None:
    shared = [{"name": "federator-task", "mountPath": "/etc/federator/task"}]
    data = {"driver": {"volumeMounts": shared}, "executor": {"volumeMounts": shared}}
    assert anchors_and_aliases(yaml.safe_dump(data)), "the check must see what plain PyYAML writes"
    text = plainyaml.dump(data)
    assert anchors_and_aliases(text) == []
    assert yaml.safe_load(text) == data


@pytest.mark.parametrize("launcher", ["kubeflow", "apache"])
def test_render_prints_plain_yaml(launcher: str) -> None:
    # Cluster-ready examples only: the others use the emulator and are refused (exit code 1) without output.
    examples = ["eh-replication-cluster.yaml", "sb-all-active-cluster.yaml", "failover-group.yaml"]
    args = ["render", "--launcher", launcher] + [
        a for e in examples for a in ("-f", str(ROOT / "examples" / e))
    ]
    result = runner.invoke(app, args)
    kinds = [d["kind"] for d in yaml.safe_load_all(result.stdout) if d]
    assert kinds.count("SparkApplication") >= 1 and "ReplicationTask" in kinds, result.stdout
    assert anchors_and_aliases(result.stdout) == []


def test_crds_prints_plain_yaml() -> None:
    result = runner.invoke(app, ["crds"])
    assert result.exit_code == 0
    assert anchors_and_aliases(result.stdout) == []


def test_kubectl_plugin_yaml_output_is_plain() -> None:
    condition: dict[str, Any] = {"type": "Ready", "status": "True"}
    buffer = io.StringIO()
    output.dump(
        {"tasks": [{"conditions": [condition]}, {"conditions": [condition]}]}, "yaml", Console(file=buffer)
    )
    assert anchors_and_aliases(buffer.getvalue()) == []
