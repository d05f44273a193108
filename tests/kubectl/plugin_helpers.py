"""Helpers for the `kubectl federator` tests: the plugin's environment and objects created as the operator
leaves them."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from support.kube import KubeServer

API = "/apis/federator.io/v1alpha1"
MERGE = "application/merge-patch+json"
PLURALS = {
    "FailoverGroup": "failovergroups",
    "ServiceBusMirror": "servicebusmirrors",
    "ReplicationTask": "replicationtasks",
}


class Plugin(Protocol):
    def __call__(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]: ...


def plugin_env(kubeconfig: Path, home: Path) -> dict[str, str]:
    return {
        # kubectl looks plugins up on PATH: the venv's bin holds kubectl-federator.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "KUBE_FEATURE_WatchListClient": "false",
        "COLUMNS": "200",
    }


def one_line_error(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """The shape of every failure: exit code 1, nothing but one `error: ...` line on stderr."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def namespaces(kube: KubeServer, *names: str) -> None:
    """Namespaces as a cluster has them (the fake API server stores none): the plugin tells a namespace
    that does not exist from an empty one."""
    for name in names:
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        path = f"/api/v1/namespaces/{name}"
        kube.call(lambda path=path, obj=obj: kube.emulator["get", path] << obj)  # type: ignore[misc]


def create(kube: KubeServer, obj: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create an object through the API (as kubectl would) and, like the operator, write its status."""
    ns = obj["metadata"].setdefault("namespace", "default")
    if obj["apiVersion"].startswith("federator.io/"):
        path = f"{API}/namespaces/{ns}/{PLURALS[obj['kind']]}"
    else:
        path = f"/api/v1/namespaces/{ns}/{obj['kind'].lower()}s"
    code, body = kube.request("POST", path, obj)
    assert code in (200, 201), body
    if status is not None:
        code, body = kube.request(
            "PATCH", f"{path}/{obj['metadata']['name']}/status", {"status": status}, MERGE
        )
        assert code == 200, body
    return body  # type: ignore[no-any-return]


def group_warning(name: str, reason: str, message: str, **extra: Any) -> dict[str, Any]:
    """A Warning Event about FailoverGroup default/orders, as the operator records one."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "FailoverGroup", "name": "orders", "namespace": "default"},
        "reason": reason,
        "type": "Warning",
        "message": message,
        **extra,
    }


def read_until(stream: object, needle: str, timeout: float = 20) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    fd = stream.fileno()  # type: ignore[attr-defined]
    while needle not in seen:
        assert time.monotonic() < deadline, f"{needle!r} not printed; got:\n{seen}"
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 65536).decode()
            assert chunk, f"the plugin exited; got:\n{seen}"
            seen += chunk
    return seen


def plugin_process(kubectl: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`kubectl federator ARGS` left running (a watch, a switch being followed)."""
    return subprocess.Popen(
        [str(kubectl), "federator", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
