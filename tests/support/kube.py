"""Pytest plugin: a faithful in-memory Kubernetes API server, and kubectl/helm pointed at it.

Register it once for the whole suite with ``pytest_plugins = ["support.kube"]`` in tests/conftest.py.

The server runs on its own event loop in a background thread, so that synchronous tests can shell out
to kubectl (a blocking subprocess) and an operator can run in another thread, without ever blocking
the loop that serves them. Fixtures:

* ``kube`` → :class:`KubeServer`: the emulator on 127.0.0.1 and an ephemeral port, with builtins,
  Federator's CRD kinds and both SparkApplication kinds declared; stopped after the test.
* ``kubeconfig`` → Path of a kubeconfig for it (namespace ``default``).
* ``kubectl(*args, input=None, check=True, timeout=30)`` → CompletedProcess[str] of ``.tools/bin/kubectl``.
* ``helm(*args, check=True, timeout=60)`` → CompletedProcess[str] of ``.tools/bin/helm``, offline.
* ``k8s_tools`` (session) → :class:`K8sTools`; runs tools/install-k8s-tools once if a binary is missing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import kmock
import pytest
import yaml

from .kubeapi import FaithfulKubernetesEmulator
from .rbac import OPERATOR_AGENTS, Triple, granted, needed
from .resources import ROOT, declare_all

__all__ = [
    "FaithfulKubernetesEmulator",
    "K8sTools",
    "KubeServer",
    "helm",
    "k8s_tools",
    "kube",
    "kubeconfig",
    "kubectl",
    "operator_role",
    "operator_stays_within_its_role",
]

T = TypeVar("T")
TOOLS_BIN = ROOT / ".tools" / "bin"
INSTALLER = ROOT / "tools" / "install-k8s-tools"


class Runner(Protocol):
    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]: ...


@dataclass(frozen=True)
class K8sTools:
    kubectl: Path
    helm: Path


class KubeServer:
    """A running :class:`FaithfulKubernetesEmulator`, usable from any thread."""

    def __init__(self, emulator: FaithfulKubernetesEmulator) -> None:
        self.emulator = emulator
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="kube-emulator", daemon=True)
        self._started: concurrent.futures.Future[None] = concurrent.futures.Future()

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        try:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            async with self.emulator, kmock.Server(self.emulator, host="127.0.0.1") as server:
                self.url = str(server.url).rstrip("/")
                self._started.set_result(None)
                await self._stop.wait()
        except BaseException as e:
            if not self._started.done():
                self._started.set_exception(e)
            raise

    def start(self) -> None:
        self._thread.start()
        self._started.result(timeout=10)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the emulator thread did not stop"

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the server's loop: the safe way to read or seed ``emulator.objects``."""
        assert self._loop is not None

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=10)

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        """One HTTP call to the API; returns (status, decoded JSON body). Never raises on 4xx/5xx."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path,
            data=data,
            method=method.upper(),
            headers={"Content-Type": content_type, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            with e:
                return e.code, json.loads(e.read() or b"null")

    def server_errors(self) -> list[Exception]:
        """Server-side failures other than the ordinary Kubernetes answers (404, 409, 422...)."""
        errors = self.call(lambda: list(self.emulator.errors))
        return [e for e in errors if not isinstance(e, kmock.KubernetesError)]


@pytest.fixture(scope="session")
def k8s_tools() -> K8sTools:
    tools = K8sTools(kubectl=TOOLS_BIN / "kubectl", helm=TOOLS_BIN / "helm")
    if not (os.access(tools.kubectl, os.X_OK) and os.access(tools.helm, os.X_OK)):
        subprocess.run([str(INSTALLER)], check=True, capture_output=True, text=True, timeout=600)
    return tools


@contextlib.contextmanager
def serving(emulator: FaithfulKubernetesEmulator) -> Iterator[KubeServer]:
    """``emulator`` (a subclass, for a test that needs another behaviour) served with builtins,
    Federator's kinds and Spark's declared, until the block ends."""
    declare_all(emulator.resources)
    server = KubeServer(emulator)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with serving(FaithfulKubernetesEmulator()) as server:
        yield server


@pytest.fixture(scope="session")
def operator_role(k8s_tools: K8sTools, tmp_path_factory: pytest.TempPathFactory) -> set[Triple]:
    """What the chart's operator Role grants in a watched namespace (`helm template`, default values)."""
    home = tmp_path_factory.mktemp("rbac-helm")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(home / "none"),
    }
    done = subprocess.run(
        [str(k8s_tools.helm), "template", "fed", str(ROOT / "charts" / "federator")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    [role] = [
        d
        for d in yaml.safe_load_all(done.stdout)
        if d and d["kind"] == "Role" and d["metadata"]["name"] == "fed-federator"
    ]
    return granted(role["rules"])


@pytest.fixture(autouse=True)
def operator_stays_within_its_role(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every request the operator made in a test with the fake API server is one the chart's Role
    grants: the fake server enforces no RBAC (support/rbac.py)."""
    grants = request.getfixturevalue("operator_role") if "kube" in request.fixturenames else None
    yield
    server = request.node.funcargs.get("kube")
    if grants is None or not isinstance(server, KubeServer):
        return
    made = {
        (method, path, watch)
        for agent, method, path, watch in list(server.emulator.requested)
        if agent.startswith(OPERATOR_AGENTS)
    }
    refused = sorted(
        {
            f"{need} for {method} {path}"
            for method, path, watch in made
            if (need := needed(method, path, watch)) is not None and need not in grants
        }
    )
    assert not refused, "the chart's operator Role does not grant:\n" + "\n".join(refused)


@pytest.fixture
def kubeconfig(kube: KubeServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "kmock",
                "preferences": {},
                "clusters": [{"name": "kmock", "cluster": {"server": kube.url}}],
                "users": [{"name": "kmock", "user": {"token": "kmock"}}],
                "contexts": [
                    {
                        "name": "kmock",
                        "context": {"cluster": "kmock", "user": "kmock", "namespace": "default"},
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    return path


def _runner(binary: Path, env: dict[str, str], cwd: Path, fix: Callable[[list[str]], list[str]]) -> Runner:
    def run(
        *args: str, input: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(binary), *fix(list(args))]
        done = subprocess.run(
            argv, input=input, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    return run


def _no_validation(args: list[str]) -> list[str]:
    # kmock serves no /openapi/v2 or /v3, so client-side validation ("failed to download openapi") fails.
    validated = args and args[0] in {"apply", "create", "replace"}
    if validated and not any(a.startswith("--validate") for a in args):
        return [*args, "--validate=false"]
    return args


@pytest.fixture
def kubectl(kubeconfig: Path, k8s_tools: K8sTools, tmp_path: Path) -> Runner:
    home = tmp_path / "kubectl-home"  # kubectl's discovery cache goes here, never to the real ~/.kube
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        # kubectl 1.37 watches with WatchList (sendInitialEvents) by default; plain watches are simpler.
        "KUBE_FEATURE_WatchListClient": "false",
    }
    return _runner(k8s_tools.kubectl, env, ROOT, _no_validation)


@pytest.fixture
def helm(k8s_tools: K8sTools, tmp_path: Path) -> Runner:
    home = tmp_path / "helm-home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "KUBECONFIG": str(home / "no-kubeconfig"),
    }
    return _runner(k8s_tools.helm, env, ROOT, lambda args: args)
