"""The chart provides the Secret every cluster launch's Spark pods mount for RPC authentication and
encryption, under the name and key the operator's launchers mount, in every namespace that gets the Spark
service account, each with its own random value; the installer may provide it instead."""

from __future__ import annotations

import base64

import pytest
from chart_support import MATRIX, NAMESPACE, Manifest, Render, of_kind

from federator.planning.launchers import rpc


def _rpc_secrets(manifests: list[Manifest]) -> list[Manifest]:
    return [m for m in of_kind(manifests, "Secret") if m["metadata"]["name"] == rpc.SECRET_NAME]


@pytest.mark.parametrize(("name", "namespaces"), [
    ("defaults", [NAMESPACE]),
    ("several-namespaces", ["team-a", "team-b", "team-c"]),
    ("all-namespaces", ["spark-jobs", "team-a"]),
    ("everything-off", [NAMESPACE]),  # an own Spark service account still needs the secret
])
def test_the_secret_exists_wherever_the_spark_service_account_is_meant_to(
    render: Render, name: str, namespaces: list[str]
) -> None:
    secrets = _rpc_secrets(render(MATRIX[name]))
    assert sorted(s["metadata"]["namespace"] for s in secrets) == namespaces
    for secret in secrets:
        assert secret["type"] == "Opaque"
        assert list(secret["data"]) == [rpc.SECRET_KEY]


def test_each_namespace_gets_its_own_random_key(render: Render) -> None:
    secrets = _rpc_secrets(render(MATRIX["several-namespaces"]))
    keys = [base64.b64decode(s["data"][rpc.SECRET_KEY], validate=True) for s in secrets]
    assert all(len(key) >= 64 for key in keys)
    assert len(set(keys)) == len(keys), "a task in one namespace could talk to another namespace's drivers"


def test_the_installer_may_provide_it_instead(render: Render) -> None:
    assert not _rpc_secrets(render(MATRIX["network-policy-all-namespaces"]))
    assert not of_kind(render({"spark": {"rpcSecret": {"create": False}}}), "Secret")
