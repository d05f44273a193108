"""Every pattern has a manifest that runs in a cluster as well as the local one: `examples/X.yaml` connects
to the emulator (`federator run`), and `examples/X-cluster.yaml` is the same pattern connected as a cluster
connects, through Secrets or workload identity. In a cluster the operator refuses emulator connections
(`Stalled`, reason `EmulatorOnlyInLocalMode`): a user copying an example to try the operator must find
one it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from federator.cli.main import app
from federator.handlers.context import OperatorContext
from federator.reasons import EMULATOR_ONLY_IN_LOCAL_MODE
from federator.settings import OperatorSettings
from support.kopf_runner import running_operator
from support.kube import KubeServer
from support.polling import eventually

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOCAL = sorted(p for p in EXAMPLES.glob("*.yaml") if not p.stem.endswith("-cluster"))
CLUSTER = sorted(EXAMPLES.glob("*-cluster.yaml"))


def federator_objects(path: Path) -> list[dict[str, Any]]:
    return [
        d
        for d in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if d and str(d.get("apiVersion", "")).startswith("federator.io/")
    ]


def twin(local: Path) -> Path:
    return local.with_name(f"{local.stem}-cluster.yaml")


def pattern(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What makes the resource the pattern it is, whatever it connects to and is named."""
    spec = obj["spec"]
    if obj["kind"] == "ServiceBusMirror":
        return ("ServiceBusMirror", spec["pattern"])
    if obj["kind"] == "FailoverGroup":
        return ("FailoverGroup", spec.get("mode", "manual"), "publishing" in spec)
    if obj["kind"] == "ReplicationApplication":
        return ("ReplicationApplication", spec.get("scheduling", {}).get("mode", "FAIR"))
    follows = any("failoverGroupRef" in (e.get("connection") or {}) for e in spec["source"].values())
    return (
        "ReplicationTask",
        tuple(sorted(spec["source"])),
        tuple(
            sorted(kind for target in spec["targets"] for kind in target if kind not in {"name", "condition"})
        ),
        tuple(sorted(k for editor in spec.get("editors", []) for k in editor)),
        any("condition" in target for target in spec["targets"]),
        *(key in spec for key in ("unrouted", "deadLetter", "loopPrevention", "checkpointTranslation")),
        follows,
        "applicationRef" in spec.get("runtime", {}),
    )


@pytest.mark.parametrize("local", LOCAL, ids=[p.stem for p in LOCAL])
def test_every_local_example_has_a_cluster_twin_of_the_same_pattern(local: Path) -> None:
    cluster = twin(local)
    assert cluster.exists(), f"{local.name} runs only in local mode: add {cluster.name}"
    assert sorted(map(pattern, federator_objects(cluster))) == sorted(map(pattern, federator_objects(local)))


@pytest.mark.parametrize("example", CLUSTER, ids=[p.stem for p in CLUSTER])
def test_a_cluster_example_connects_as_a_cluster_does(example: Path) -> None:
    objects = federator_objects(example)
    assert objects and "emulator" not in json.dumps(objects), "emulator connections are for local mode"
    # What the operator would create: nothing refused for being local-only (a task that follows a
    # FailoverGroup can only be planned by the operator, which reads the group).
    result = CliRunner().invoke(app, ["render", "-f", str(example)])
    assert EMULATOR_ONLY_IN_LOCAL_MODE not in result.stderr
    assert result.exit_code == 0 or "FailoverGroupFollowingNotAvailable" in result.stderr, result.stderr


UNREACHABLE = "Endpoint=sb://127.0.0.1:9/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=a2V5"


def secret_refs(value: Any, found: set[str]) -> set[str]:
    """Names of the Secrets a manifest references (`secretRef`, `connectionSecretRef`, `keySecretRef`...)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key.lower().endswith("secretref") and isinstance(inner, dict):
                found.add(inner["name"])
            secret_refs(inner, found)
    elif isinstance(value, list):
        for inner in value:
            secret_refs(inner, found)
    return found


def apply(kube: KubeServer, namespace: str, example: Path) -> list[str]:
    """The example's documents created in `namespace`, with every Secret it references (connection
    strings to a port nothing listens on); the paths of its Federator resources."""
    docs = [d for d in yaml.safe_load_all(example.read_text(encoding="utf-8")) if d]
    for name in sorted(secret_refs(docs, set())):
        data = {key: UNREACHABLE for key in ("connectionString", "dsn", "hmacKey")}
        docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data})
    paths = []
    for doc in docs:
        if doc["kind"] == "Secret" and any(d is not doc and d["metadata"] == doc["metadata"] for d in docs):
            continue
        doc["metadata"]["namespace"] = namespace
        group = "/apis/federator.io/v1alpha1" if doc["apiVersion"].startswith("federator.io/") else "/api/v1"
        path = f"{group}/namespaces/{namespace}/{doc['kind'].lower()}s"
        code, body = kube.request("POST", path, doc)
        assert code in (200, 201, 409), body
        if group != "/api/v1":
            paths.append(f"{path}/{doc['metadata']['name']}")
    return paths


def reasons(kube: KubeServer, path: str) -> set[str]:
    status = kube.request("GET", path)[1].get("status") or {}
    return {c.get("reason", "") for c in status.get("conditions") or [] if c.get("status") != "False"}


@pytest.mark.slow
def test_in_a_cluster_the_operator_refuses_only_the_local_examples(
    kube: KubeServer, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import federator.handlers  # noqa: F401 — registers the handlers

    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    applied = {example: apply(kube, example.stem, example) for example in [*LOCAL, *CLUSTER]}
    memo = OperatorContext(OperatorSettings(observe_interval_seconds=1, retry_seconds=1), serve_metrics=False)
    with running_operator(namespaces=[example.stem for example in applied], memo=memo):
        every = [path for paths in applied.values() for path in paths]
        eventually(lambda: all(reasons(kube, path) for path in every), timeout=90, message="not reconciled")
        found = {
            example: set().union(*(reasons(kube, p) for p in paths)) for example, paths in applied.items()
        }
    refused = sorted(e.name for e, seen in found.items() if EMULATOR_ONLY_IN_LOCAL_MODE in seen)
    assert refused == [e.name for e in LOCAL], found
