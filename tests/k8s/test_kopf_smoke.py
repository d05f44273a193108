"""kopf against the faithful emulator: each object's create handler runs exactly once.

With plain kmock 0.8 the same scenario ran create twice per object (no resourceVersion semantics).
kopf runs in its own thread and event loop, as the operator tests will (docs/testing.md).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import kopf

from support.kopf_runner import running_operator
from support.kube import KubeServer
from support.polling import eventually

RT = "/apis/federator.io/v1alpha1/namespaces/default/replicationtasks"


def label(kube: KubeServer, name: str) -> int:
    """Label the object; the resourceVersion of that change."""
    patch = {"metadata": {"labels": {"example.com/marked": "yes"}}}
    status, body = kube.request("PATCH", f"{RT}/{name}", patch, "application/merge-patch+json")
    assert status == 200, body
    return int(body["metadata"]["resourceVersion"])


def test_create_handler_runs_exactly_once_per_object(kube: KubeServer) -> None:
    registry = kopf.OperatorRegistry()
    calls: Counter[str] = Counter()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=kube.url, token="kmock")

    @kopf.on.create("federator.io", "v1alpha1", "replicationtasks", registry=registry)
    def created(name: str, patch: kopf.Patch, **_: Any) -> None:
        calls[name] += 1
        patch.status["observed"] = True
        kopf.info({"metadata": {"name": name, "namespace": "default"}}, reason="Seen", message=name)

    delivered: dict[str, int] = {}  # each object's latest resourceVersion that kopf's watch delivered

    @kopf.on.event("federator.io", "v1alpha1", "replicationtasks", registry=registry)
    def watched(name: str, meta: kopf.Meta, **_: Any) -> None:
        delivered[name] = max(delivered.get(name, 0), int(meta["resourceVersion"]))

    def spec(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "federator.io/v1alpha1",
            "kind": "ReplicationTask",
            "metadata": {"name": name},
            "spec": {"paused": False},
        }

    kube.request("POST", RT, spec("before"))  # exists when the operator starts
    with running_operator(registry=registry):
        kube.request("POST", RT, spec("during-1"))
        kube.request("POST", RT, spec("during-2"))

        def handled() -> bool:
            items = kube.request("GET", RT)[1]["items"]
            return len(items) == 3 and all(i.get("status", {}).get("observed") for i in items)

        eventually(handled)
        # kopf handles one object's events one after another: once its watch has delivered a later change
        # (a label set here), it is done with every event before it, those of its own patches included.
        # A duplicate run would come from one of those, re-listed or replayed.
        marks = {name: label(kube, name) for name in ("before", "during-1", "during-2")}
        eventually(
            lambda: all(delivered.get(name, 0) >= mark for name, mark in marks.items()),
            message="kopf's watch did not deliver the later changes",
        )
        assert calls == Counter({"before": 1, "during-1": 1, "during-2": 1})

        def seen() -> list[str]:
            events = kube.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
            return sorted(e["message"] for e in events if e.get("reason") == "Seen")

        eventually(lambda: seen() == ["before", "during-1", "during-2"], message="not one Event per object")
        assert kube.server_errors() == []
