"""`kubectl federator` as users run it: the real kubectl binary finds `kubectl-federator` (the installed
entry point, next to this Python) on PATH and runs it against the fake API server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from plugin_helpers import Plugin, namespaces, plugin_env

from support.kube import K8sTools, KubeServer
from support.resources import ROOT


@pytest.fixture
def plugin_environment(kubeconfig: Path, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "plugin-home"
    home.mkdir(exist_ok=True)
    return plugin_env(kubeconfig, home)


@pytest.fixture
def federator(kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]) -> Plugin:
    """`kubectl federator ARGS...` through the real kubectl binary, against a cluster with the namespaces
    `default` and `payments`."""
    namespaces(kube, "default", "payments")

    def run(
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(k8s_tools.kubectl), "federator", *args]
        done = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            env={**plugin_environment, **(env or {})},
            cwd=ROOT,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    return run
