"""The Federator operator running against the faithful fake API server, in its own thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from federator.handlers.context import OperatorContext
from federator.settings import OperatorSettings
from support.kopf_runner import running_operator
from support.kube import KubeServer

NS = "default"


@pytest.fixture
def operator_settings() -> OperatorSettings:
    """Fast cadence for tests; override in a test module to change it."""
    return OperatorSettings(observe_interval_seconds=1, retry_seconds=1)


@pytest.fixture
def federator_operator(
    kube: KubeServer, kubeconfig: Path, operator_settings: OperatorSettings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KubeServer]:
    """Federator's handlers (kopf's default registry) watching namespace `default`."""
    import federator.handlers  # noqa: F401 — registers the handlers

    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    memo = OperatorContext(operator_settings, serve_metrics=False)
    with running_operator(namespaces=[NS], memo=memo):
        yield kube
