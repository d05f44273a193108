"""The project-installed helm runs offline (the real chart's tests come with the chart)."""

from __future__ import annotations

from pathlib import Path

import yaml

from support.kube import Runner


def test_helm_version_is_v4(helm: Runner) -> None:
    assert helm("version", "--short").stdout.startswith("v4.")


def test_helm_create_lint_and_template_work_offline(helm: Runner, tmp_path: Path) -> None:
    chart = tmp_path / "throwaway"
    helm("create", str(chart))
    helm("lint", "--strict", str(chart))
    rendered = helm("template", "rel", str(chart), "--set", "replicaCount=3").stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert deployment["metadata"]["name"] == "rel-throwaway"
    assert deployment["spec"]["replicas"] == 3
