"""Render the Federator chart with the real helm binary (offline), once per distinct set of values."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_support import CHART, NAMESPACE, RELEASE, Helm, Manifest, Render

from support.kube import K8sTools
from support.resources import ROOT


@pytest.fixture(scope="session")
def chart_helm(k8s_tools: K8sTools, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """`helm(*args, check=True)` with a throwaway HOME and no cluster, shared by the chart tests."""
    home = tmp_path_factory.mktemp("helm-home")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data"), "KUBECONFIG": str(home / "no-kubeconfig")}

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(k8s_tools.helm), *args], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=60)
        if check and done.returncode != 0:
            command = " ".join(args)
            raise AssertionError(f"helm {command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    return run


@pytest.fixture(scope="session")
def values_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[dict[str, Any]], Path]:
    """Write a values override to a file (JSON is YAML), so types are exactly what the test says."""
    directory = tmp_path_factory.mktemp("values")
    count = iter(range(1_000_000))

    def write(values: dict[str, Any]) -> Path:
        path = directory / f"values-{next(count)}.yaml"
        path.write_text(json.dumps(values), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def render(chart_helm: Helm, values_file: Callable[[dict[str, Any]], Path]) -> Iterator[Render]:
    """`render(values=None, kube_version=None, include_crds=False)` -> what `helm template` prints."""
    cache: dict[str, list[Manifest]] = {}

    def run(values: dict[str, Any] | None = None, kube_version: str | None = None,
            include_crds: bool = False) -> list[Manifest]:
        key = json.dumps([values, kube_version, include_crds], sort_keys=True)
        if key not in cache:
            args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
            if values:
                args += ["--values", str(values_file(values))]
            if kube_version:
                args += ["--kube-version", kube_version]
            if include_crds:
                args.append("--include-crds")
            out = chart_helm(*args).stdout
            cache[key] = [d for d in yaml.safe_load_all(out) if d]
        return [json.loads(json.dumps(d)) for d in cache[key]]  # a fresh copy for every caller

    yield run
