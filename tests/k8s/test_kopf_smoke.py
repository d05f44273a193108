"""kopf against the faithful emulator: each object's create handler runs exactly once.

With plain kmock 0.8 the same scenario ran create twice per object (no resourceVersion semantics).
kopf runs in its own thread and event loop, as the operator tests will (docs/testing.md).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import kopf

from support.kopf_runner import running_operator
from support.kube import KubeServer
from support.polling import eventually

RT = "/apis/federator.io/v1alpha1/namespaces/default/replicationtasks"


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
        time.sleep(1.0)  # a duplicate run would come from a re-listed or replayed watch event
        assert calls == Counter({"before": 1, "during-1": 1, "during-2": 1})
        events = kube.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
        assert sorted(e["message"] for e in events if e.get("reason") == "Seen") == [
            "before",
            "during-1",
            "during-2",
        ]
        assert kube.server_errors() == []
