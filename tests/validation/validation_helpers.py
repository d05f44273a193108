"""Small valid manifests of each kind, to be spoiled one field at a time by the tests."""

from __future__ import annotations

from typing import Any

from federator.validation import check_object

API_VERSION = "federator.io/v1alpha1"


def task(name: str = "t", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "source": {
            "eventHub": {"connection": {"emulator": {"namespace": "primary"}}, "eventHubName": "orders"}
        },
        "targets": [
            {
                "name": "copy",
                "eventHub": {"connection": {"emulator": {"namespace": "b"}}, "eventHubName": "orders"},
            }
        ],
    }
    body.update(spec)
    return {"apiVersion": API_VERSION, "kind": "ReplicationTask", "metadata": {"name": name}, "spec": body}


def group(name: str = "g", **spec: Any) -> dict[str, Any]:
    members = [
        {"name": n, "connection": {"emulator": {"namespace": n}}, "endpoint": f"{n}.example.com"}
        for n in ("a", "b")
    ]
    body: dict[str, Any] = {"primaryMember": "a", "members": members, "probe": {"entity": {"queueName": "q"}}}
    body.update(spec)
    return {"apiVersion": API_VERSION, "kind": "FailoverGroup", "metadata": {"name": name}, "spec": body}


def spillover_mirror(name: str = "m", **settings: Any) -> dict[str, Any]:
    members = [{"name": n, "connection": {"emulator": {"namespace": n}}} for n in ("a", "b")]
    spill = {"entities": [{"queueName": "orders"}], **settings}
    body = {"pattern": "spillover", "members": members, "spillover": spill}
    return {"apiVersion": API_VERSION, "kind": "ServiceBusMirror", "metadata": {"name": name}, "spec": body}


def problems(obj: Any) -> list[str]:
    return [str(p) for p in check_object(obj).problems]


def warnings(obj: Any) -> list[str]:
    verdict = check_object(obj)
    assert verdict.problems == [], [str(p) for p in verdict.problems]
    return [str(p) for p in verdict.warnings]
