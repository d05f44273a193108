"""The test API server keeps every version of an object as it was written: a watch that resumes from a
resourceVersion replays each change as it was, however the object changed since. Its writes build each new
version from the stored one without changing it, so server-side apply and the other writes
(support/server_side_apply.py) leave the objects they are given as they were, and their results share
unchanged parts with them."""

from __future__ import annotations

import copy
import json
import threading
import urllib.request
from typing import Any

from support import server_side_apply as ssa
from support.kube import KubeServer

CM = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
NOW = "2026-11-30T06:00:00Z"


def config_map(**data: str) -> dict[str, Any]:
    meta = {"name": "cm", "namespace": "default", "labels": {"app": "orders"}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def write(manager: str) -> ssa.Write:
    return ssa.Write(manager, "v1", NOW)


def stored(obj: dict[str, Any], uid: str = "u1") -> dict[str, Any]:
    """As the server stores it: with a uid."""
    return {**obj, "metadata": {**obj["metadata"], "uid": uid, "resourceVersion": "1"}}


def unchanged_by(call: Any, *inputs: dict[str, Any]) -> Any:
    before = copy.deepcopy(inputs)
    result = call(*inputs)
    assert inputs == before, "the write changed an object it was given"
    return result


def test_an_apply_that_creates_leaves_its_inputs_as_they_were() -> None:
    empty = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}
    result = unchanged_by(
        lambda live, body: ssa.apply(live, body, write("federator"), force=False), empty, config_map(key="1")
    )
    assert result["data"] == {"key": "1"}


def test_a_re_apply_and_a_forced_takeover_leave_the_live_object_as_it_was() -> None:
    live = stored(ssa.apply({}, config_map(key="1"), write("federator"), force=False))
    again = unchanged_by(
        lambda o, b: ssa.apply(o, b, write("federator"), force=False), live, config_map(key="1")
    )
    assert again == live

    taken = unchanged_by(lambda o, b: ssa.apply(o, b, write("other"), force=True), live, config_map(key="2"))
    assert taken["data"] == {"key": "2"}


def test_kubectl_taking_over_its_client_side_apply_leaves_the_live_annotations_as_they_were() -> None:
    annotated = config_map(key="1")
    annotated["metadata"]["annotations"] = {ssa.LAST_APPLIED: json.dumps(config_map(key="1"))}
    live = stored(ssa.update(None, annotated, write("kubectl-client-side-apply")))

    result = unchanged_by(
        lambda o, b: ssa.apply(o, b, write("kubectl"), force=False), live, config_map(key="2")
    )
    assert json.loads(result["metadata"]["annotations"][ssa.LAST_APPLIED])["data"] == {"key": "2"}


def test_an_update_leaves_both_versions_as_they_were() -> None:
    live = stored(ssa.apply({}, config_map(key="1"), write("federator"), force=False))
    new = copy.deepcopy(live)
    new["data"]["key"] = "2"

    result = unchanged_by(lambda o, n: ssa.update(o, n, write("kopf")), live, new)
    assert "kopf" in {e["manager"] for e in result["metadata"]["managedFields"]}


def events_since(kube: KubeServer, version: str, count: int) -> list[dict[str, Any]]:
    """The first `count` events of a watch from `version` (read in a thread: the stream stays open)."""
    events: list[dict[str, Any]] = []
    url = f"{kube.url}{CM}?watch=true&timeoutSeconds=5&resourceVersion={version}"

    def read() -> None:
        with urllib.request.urlopen(url, timeout=10) as response:
            for line in response:
                events.append(json.loads(line))
                if len(events) == count:
                    return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    return events


def test_a_resumed_watch_replays_each_change_as_it_was_written(kube: KubeServer) -> None:
    status, created = kube.request("PATCH", f"{CM}/cm?fieldManager=federator", config_map(key="1"), APPLY)
    assert status == 201, created
    kube.request("PATCH", f"{CM}/cm", {"data": {"other": "x"}}, MERGE)
    kube.request("PATCH", f"{CM}/cm?fieldManager=federator", config_map(key="3"), APPLY)
    kube.request("PATCH", f"{CM}/cm", {"metadata": {"labels": {"app": "billing"}}}, MERGE)

    replayed = events_since(kube, created["metadata"]["resourceVersion"], 3)

    assert [(e["object"]["data"], e["object"]["metadata"]["labels"]) for e in replayed] == [
        ({"key": "1", "other": "x"}, {"app": "orders"}),
        ({"key": "3", "other": "x"}, {"app": "orders"}),
        ({"key": "3", "other": "x"}, {"app": "billing"}),
    ]
