"""The operator image, run as a node would run it (read-only root, its own uid, /tmp an emptyDir): the CLI
answers, validates the examples, and `federator operator` serves its health endpoint and reconciles a
ReplicationTask against the fake API server."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.images import ImageRoot, Run
from support.kube import KubeServer
from support.orders import orders_secret, orders_service_account, orders_task
from support.polling import eventually
from support.resources import ROOT

pytestmark = pytest.mark.images

NS = "default"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"


PORT_TAKEN = "address already in use"  # how kopf's liveness endpoint and the metrics server say it


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_image_runs_federator_as_uid_10001_with_the_operator_as_its_command(operator_image):
    config = operator_image.config
    assert (config.entrypoint, config.cmd) == (["federator"], ["operator", "--liveness=http://0.0.0.0:8080/healthz"])
    assert config.user == "10001:10001"
    assert config.exposed_ports == ["8080/tcp", "9090/tcp"]


def test_version_answers(operator_image, budget):
    started = time.monotonic()
    code, output = operator_image.run([*operator_image.config.entrypoint, "--version"], log_name="version")
    budget["operatorVersionSeconds"] = time.monotonic() - started
    assert (code, output.strip()) == (0, "0.1.0")


def test_every_example_validates(operator_image):
    examples = sorted(p.name for p in (ROOT / "examples").glob("*.yaml"))
    code, output = operator_image.run(
        [*operator_image.config.entrypoint, "validate", *(f"/examples/{name}" for name in examples)],
        binds={"/examples": ROOT / "examples"},
        log_name="validate",
    )
    assert code == 0, output


def test_nothing_to_install_with_and_no_compiler(operator_image):
    # apt-get is Debian's own: it needs root, which the image never has.
    assert operator_image.installers_and_compilers() == ([], ["apt-get"])


def test_the_root_file_system_is_read_only_and_tmp_is_writable(operator_image):
    code, output = operator_image.run(
        ["sh", "-c", "touch /tmp/ok && id -u && id -g && touch /opt/venv/x"], log_name="readonly"
    )
    assert code != 0
    assert output.splitlines()[:2] == ["10001", "10001"]
    assert "Read-only file system" in output


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def test_the_operator_starts_healthy_and_gives_a_task_its_spark_application(
    operator_image: ImageRoot, kube: KubeServer, kubeconfig: Path, budget: dict[str, float]
):
    run, metrics = start_operator(operator_image, kubeconfig)
    try:
        assert run.process.poll() is None, "the operator stopped before it served its health"
        budget["operatorHealthySeconds"] = time.monotonic() - run.started
        kube.request("POST", SECRETS, orders_secret())
        kube.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())
        kube.request("POST", RT, orders_task("orders", NS))
        app = eventually(lambda: _get(kube, f"{APPS}/orders"), timeout=90, message="no SparkApplication")
        budget["operatorFirstSparkApplicationSeconds"] = time.monotonic() - run.started
        assert app["spec"]["mainApplicationFile"] == "local:///opt/federator/replicate.py"
        # A namespaced install never asks for the cluster-wide namespace list (403 and retries).
        assert "Not enough permissions to list namespaces" not in run.output()
        assert healthy(f"http://127.0.0.1:{metrics}/metrics")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n{run.output()[-4000:]}") from None
    finally:
        code = run.terminate()
    assert code == 0, run.output()[-4000:]
    assert kube.server_errors() == []


def start_operator(image: ImageRoot, kubeconfig: Path, attempts: int = 3) -> tuple[Run, int]:
    """The operator with its health and metrics endpoints on free ports, once it serves its health (or has
    stopped): (run, metrics port). Neither endpoint can bind port 0 and say which port it got, so the ports
    are chosen here, and another process may take one before the operator binds it: it is then started
    again on others."""
    for _ in range(attempts):
        health, metrics = free_port(), free_port()
        run = image.start(
            [*image.config.entrypoint, "operator", "--namespace", NS,
             f"--liveness=http://127.0.0.1:{health}/healthz"],
            env={
                "KUBECONFIG": "/etc/federator/kubeconfig",
                "FEDERATOR_METRICS_PORT": str(metrics),
                "FEDERATOR_METRICS_ADDRESS": "127.0.0.1",
            },
            binds={"/etc/federator/kubeconfig": kubeconfig},
            log_name="operator",
        )
        url = f"http://127.0.0.1:{health}/healthz"
        try:
            eventually(
                lambda run=run, url=url: (
                    run.process.poll() is not None or PORT_TAKEN in run.output().lower() or healthy(url)
                ),
                timeout=60,
                message="no health endpoint",
            )
        except AssertionError as failure:
            run.terminate()
            raise AssertionError(f"{failure}\n{run.output()[-4000:]}") from None
        if PORT_TAKEN not in run.output().lower():
            return run, metrics
        run.terminate()
    raise AssertionError(f"the ports chosen were taken by others {attempts} times in a row")


def _get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None
