"""The Federator operator running against the faithful fake API server, in its own thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest

from federator.settings import OperatorSettings
from support.kube import KubeServer

NS = "default"


def _kopf_settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.scanning.disabled = True
    s.watching.server_timeout = 10
    s.watching.client_timeout = 15
    s.execution.default_backoff = 0.5
    s.process.ultimate_exiting_timeout = None
    return s


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
    stop, ready = threading.Event(), threading.Event()
    memo: Any = kopf.Memo(federator=operator_settings, serve_metrics=False)
    thread = threading.Thread(
        target=asyncio.run,
        name="federator-operator",
        args=(
            kopf.operator(
                settings=_kopf_settings(),
                standalone=True,
                namespaces=[NS],
                stop_flag=stop,
                ready_flag=ready,
                memo=memo,
            ),
        ),
    )
    thread.start()
    try:
        assert ready.wait(15), "the operator did not become ready"
        yield kube
    finally:
        stop.set()
        thread.join(20)
    assert not thread.is_alive(), "the operator did not stop"
