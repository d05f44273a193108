"""The faithful emulator behaves like an API server where kmock 0.8 does not (see docs/testing.md)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import pytest

from support.kube import KubeServer

RT = "/apis/federator.io/v1alpha1/namespaces/default/replicationtasks"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def task(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": name},
        "spec": spec or {"paused": False},
    }


def create(kube: KubeServer, name: str, **spec: Any) -> dict[str, Any]:
    status, obj = kube.request("POST", RT, task(name, **spec))
    assert status == 200, obj
    return obj


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_create_sets_server_owned_metadata(kube: KubeServer) -> None:
    obj = create(kube, "a")
    meta = obj["metadata"]
    assert meta["namespace"] == "default"
    assert meta["generation"] == 1
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert rv(obj) > 0


def test_resource_version_increases_on_every_write(kube: KubeServer) -> None:
    created = create(kube, "a")
    _, patched = kube.request("PATCH", f"{RT}/a", {"metadata": {"labels": {"x": "1"}}}, MERGE)
    _, status = kube.request("PATCH", f"{RT}/a/status", {"status": {"phase": "Running"}}, MERGE)
    _, other = kube.request("POST", RT, task("b"))
    versions = [rv(created), rv(patched), rv(status), rv(other)]
    assert versions == sorted(set(versions)), versions
    _, listed = kube.request("GET", RT)
    assert rv(listed) == rv(other)


def test_noop_patch_does_not_bump_resource_version(kube: KubeServer) -> None:
    created = create(kube, "a")
    _, same = kube.request("PATCH", f"{RT}/a", {"spec": {"paused": False}}, MERGE)
    assert rv(same) == rv(created)


def test_list_has_kind_api_version_and_sorted_items(kube: KubeServer) -> None:
    create(kube, "b")
    create(kube, "a")
    status, listed = kube.request("GET", RT)
    assert status == 200
    assert (listed["apiVersion"], listed["kind"]) == ("federator.io/v1alpha1", "ReplicationTaskList")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]


def test_label_and_field_selectors_filter_lists(kube: KubeServer) -> None:
    kube.request("POST", RT, {**task("a"), "metadata": {"name": "a", "labels": {"tier": "gold"}}})
    create(kube, "b")
    _, gold = kube.request("GET", f"{RT}?labelSelector=tier%3Dgold")
    _, named = kube.request("GET", f"{RT}?fieldSelector=metadata.name%3Db")
    assert [i["metadata"]["name"] for i in gold["items"]] == ["a"]
    assert [i["metadata"]["name"] for i in named["items"]] == ["b"]
    status, _ = kube.request("GET", f"{RT}?labelSelector=tier+in+(gold)")
    assert status == 400


def test_generate_name_gives_unique_names(kube: KubeServer) -> None:
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "kopf-event-"}, "reason": "R"}
    names = set()
    for _ in range(5):
        status, obj = kube.request("POST", "/api/v1/namespaces/default/events", body)
        assert status == 200, obj
        names.add(obj["metadata"]["name"])
    assert len(names) == 5
    assert all(n.startswith("kopf-event-") and len(n) == len("kopf-event-") + 5 for n in names)


def test_create_conflict_is_409(kube: KubeServer) -> None:
    create(kube, "a")
    status, body = kube.request("POST", RT, task("a"))
    assert (status, body["reason"]) == (409, "AlreadyExists")


def test_stale_json_patch_test_is_422(kube: KubeServer) -> None:
    obj = create(kube, "a")
    kube.request("PATCH", f"{RT}/a", {"metadata": {"labels": {"x": "1"}}}, MERGE)
    stale = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": obj["metadata"]["resourceVersion"]},
        {"op": "add", "path": "/metadata/finalizers", "value": ["f"]},
    ]
    status, body = kube.request("PATCH", f"{RT}/a", stale, JSON_PATCH)
    assert (status, body["reason"]) == (422, "Invalid")
    _, fresh = kube.request("GET", f"{RT}/a")
    stale[0]["value"] = fresh["metadata"]["resourceVersion"]
    status, patched = kube.request("PATCH", f"{RT}/a", stale, JSON_PATCH)
    assert (status, patched["metadata"]["finalizers"]) == (200, ["f"])


def test_stale_resource_version_in_merge_patch_is_409(kube: KubeServer) -> None:
    stale = create(kube, "a")["metadata"]["resourceVersion"]
    kube.request("PATCH", f"{RT}/a", {"spec": {"x": 1}}, MERGE)
    body = {"metadata": {"resourceVersion": stale}, "spec": {"x": 2}}
    status, _ = kube.request("PATCH", f"{RT}/a", body, MERGE)
    assert status == 409


@pytest.mark.parametrize(
    ("body", "ctype", "code"),
    [
        ({"spec": {"paused": True}}, JSON_PATCH, 400),  # the kubernetes_asyncio content-type bug
        ([{"op": "add", "path": "/spec/x", "value": 1}], MERGE, 400),
        (
            {"spec": {"paused": True}},
            "application/strategic-merge-patch+json",
            415,
        ),  # not for custom resources
        ({"spec": {"paused": True}}, "application/json", 415),
    ],
)
def test_patch_body_must_match_its_content_type(kube: KubeServer, body: Any, ctype: str, code: int) -> None:
    create(kube, "a")
    status, _ = kube.request("PATCH", f"{RT}/a", body, ctype)
    assert status == code


def test_main_endpoint_cannot_change_status(kube: KubeServer) -> None:
    create(kube, "a")
    kube.request("PATCH", f"{RT}/a/status", {"status": {"phase": "Running"}}, MERGE)
    body = {"spec": {"paused": True}, "status": {"phase": "Hacked"}}
    _, obj = kube.request("PATCH", f"{RT}/a", body, MERGE)
    assert obj["spec"]["paused"] is True
    assert obj["status"] == {"phase": "Running"}


def test_status_endpoint_changes_only_status(kube: KubeServer) -> None:
    create(kube, "a")
    body = {"spec": {"paused": True}, "metadata": {"labels": {"x": "1"}}, "status": {"phase": "Ok"}}
    _, obj = kube.request("PATCH", f"{RT}/a/status", body, MERGE)
    assert obj["spec"] == {"paused": False}
    assert "labels" not in obj["metadata"]
    assert obj["status"] == {"phase": "Ok"}


def test_create_drops_status_of_a_status_subresource_kind(kube: KubeServer) -> None:
    status, obj = kube.request("POST", RT, {**task("a"), "status": {"phase": "Fake"}})
    assert status == 200
    assert "status" not in obj


def test_generation_bumps_on_spec_changes_only(kube: KubeServer) -> None:
    create(kube, "a")
    _, obj = kube.request("PATCH", f"{RT}/a", {"metadata": {"annotations": {"a": "1"}}}, MERGE)
    assert obj["metadata"]["generation"] == 1
    _, obj = kube.request("PATCH", f"{RT}/a/status", {"status": {"phase": "Ok"}}, MERGE)
    assert obj["metadata"]["generation"] == 1
    _, obj = kube.request("PATCH", f"{RT}/a", {"spec": {"paused": True}}, MERGE)
    assert obj["metadata"]["generation"] == 2


def test_server_owned_metadata_cannot_be_patched(kube: KubeServer) -> None:
    created = create(kube, "a")
    body = {"metadata": {"uid": "mine", "generation": 99}, "spec": {"x": 1}}
    _, obj = kube.request("PATCH", f"{RT}/a", body, MERGE)
    assert obj["metadata"]["uid"] == created["metadata"]["uid"]
    assert obj["metadata"]["generation"] == 2


def test_delete_with_finalizers_waits_for_them(kube: KubeServer) -> None:
    kube.request("POST", RT, {**task("a"), "metadata": {"name": "a", "finalizers": ["f"]}})
    status, obj = kube.request("DELETE", f"{RT}/a")
    assert status == 200
    assert obj["metadata"]["deletionTimestamp"]
    assert kube.request("GET", f"{RT}/a")[0] == 200
    kube.request("PATCH", f"{RT}/a", {"metadata": {"finalizers": None}}, MERGE)
    assert kube.request("GET", f"{RT}/a")[0] == 404


def watch(kube: KubeServer, query: str, count: int) -> list[dict[str, Any]]:
    """Read ``count`` events of a watch in a thread (the stream never ends by itself)."""
    events: list[dict[str, Any]] = []
    url = f"{kube.url}{RT}?watch=true&timeoutSeconds=5&{query}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        for line in resp:
            events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def test_watch_from_resource_version_sees_only_later_events(kube: KubeServer) -> None:
    created = create(kube, "a")
    create(kube, "b")
    kube.request("PATCH", f"{RT}/a", {"spec": {"paused": True}}, MERGE)
    events = watch(kube, f"resourceVersion={created['metadata']['resourceVersion']}", 2)
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert seen == [("ADDED", "b"), ("MODIFIED", "a")]


def test_watch_without_resource_version_starts_with_current_state(kube: KubeServer) -> None:
    create(kube, "a")
    kube.request("PATCH", f"{RT}/a", {"spec": {"paused": True}}, MERGE)
    (event,) = watch(kube, "", 1)
    assert event["type"] == "ADDED"
    assert event["object"]["spec"] == {"paused": True}


def test_watch_does_not_lose_writes_made_while_it_starts(kube: KubeServer) -> None:
    create(kube, "a")
    _, listed = kube.request("GET", RT)
    writer = threading.Thread(target=lambda: [create(kube, f"n{i}") for i in range(20)])
    writer.start()
    time.sleep(0.01)
    events = watch(kube, f"resourceVersion={listed['metadata']['resourceVersion']}", 20)
    writer.join()
    assert [e["object"]["metadata"]["name"] for e in events] == [f"n{i}" for i in range(20)]


def test_watch_list_ends_initial_events_with_a_bookmark(kube: KubeServer) -> None:
    create(kube, "a")
    query = "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    events = watch(kube, query, 2)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_core_discovery_reports_v1_group_version(kube: KubeServer) -> None:
    status, body = kube.request("GET", "/api/v1")
    assert (status, body["groupVersion"]) == (200, "v1")
    _, fed = kube.request("GET", "/apis/federator.io/v1alpha1")
    by_name = {r["name"]: r for r in fed["resources"]}
    assert by_name["replicationtasks"]["shortNames"] == ["rt"]
    assert by_name["replicationtasks/status"]["shortNames"] == []
    assert {"servicebusmirrors", "failovergroups"} <= set(by_name)
