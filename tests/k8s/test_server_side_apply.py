"""Server-side apply on the test API server, as the Kubernetes docs describe it.

Each test follows a statement of https://kubernetes.io/docs/reference/using-api/server-side-apply/
(field management, managers, conflicts, merge strategy, status subresource), with kubectl's
``apply --server-side`` as the client where it can say it, and raw API calls for what kubectl hides
(the Status of a conflict, response codes, resourceVersions).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
import yaml

from support import server_side_apply as ssa
from support.kube import KubeServer, Runner
from support.rbac import needed

CM = "/api/v1/namespaces/default/configmaps"
RT = "/apis/federator.io/v1alpha1/namespaces/default/replicationtasks"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def config_map(data: dict[str, str], labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    """The docs' example object: a ConfigMap ``test-cm`` with a label and a key."""
    metadata = {"name": "test-cm", "namespace": "default", **meta}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def task(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "federator.io/v1alpha1", "kind": "ReplicationTask"}
    obj["metadata"] = {"name": "orders", "namespace": "default"}
    obj.update({k: v for k, v in (("spec", spec), ("status", status)) if v is not None})
    return obj


def apply(
    kube: KubeServer, obj: dict[str, Any], manager: str, *, force: bool = False, path: str = CM, sub: str = ""
) -> tuple[int, Any]:
    url = f"{path}/{obj['metadata']['name']}{sub}?fieldManager={manager}&force={str(force).lower()}"
    status, body = kube.request("PATCH", url, obj, APPLY)
    return status, body


def applied(kube: KubeServer, obj: dict[str, Any], manager: str, **kw: Any) -> dict[str, Any]:
    status, body = apply(kube, obj, manager, **kw)
    assert status in (200, 201), body
    return dict(body)


def entries(obj: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """managedFields by (manager, operation, subresource): the fields each owns, as FieldsV1."""
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e["fieldsV1"]
        for e in obj["metadata"].get("managedFields", [])
    }


def owners(obj: dict[str, Any], *path: str) -> set[str]:
    """The managers owning a field, e.g. ``owners(obj, "data", "key")``."""
    found = set()
    for (manager, _, _), fields in entries(obj).items():
        node: Any = fields
        for name in path:
            node = node.get(f"f:{name}") if isinstance(node, dict) else None
        if node is not None:
            found.add(manager)
    return found


def get(kube: KubeServer, path: str) -> dict[str, Any]:
    status, body = kube.request("GET", path)
    assert status == 200, body
    return dict(body)


# -- field management -------------------------------------------------------------------------------


def test_kubectl_server_side_apply_creates_the_object_with_its_managed_fields(
    kubectl: Runner, kube: KubeServer
) -> None:
    done = kubectl(
        "apply", "--server-side", "-f", "-", input=yaml.safe_dump(config_map({"key": "some value"}))
    )
    assert "serverside-applied" in done.stdout
    obj = get(kube, f"{CM}/test-cm")
    assert obj["data"] == {"key": "some value"}
    [entry] = obj["metadata"]["managedFields"]
    # The docs' example entry, field for field (kubectl's default field manager is "kubectl").
    assert {k: entry[k] for k in ("manager", "operation", "apiVersion", "fieldsType")} == {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
    }
    assert entry["fieldsV1"] == {"f:data": {"f:key": {}}}
    assert entry["time"].endswith("Z")


def test_apply_to_a_missing_object_answers_201_created_then_200(kube: KubeServer) -> None:
    first, created = apply(kube, config_map({"key": "v"}, {"test-label": "test"}), "test_manager")
    again, _ = apply(kube, config_map({"key": "w"}, {"test-label": "test"}), "test_manager")
    assert (first, again) == (201, 200)
    assert created["metadata"]["uid"] and created["metadata"]["generation"] == 1
    assert entries(created)[("test_manager", "Apply", "")] == {
        "f:data": {"f:key": {}},
        "f:metadata": {"f:labels": {"f:test-label": {}}},
    }


def test_an_apply_that_creates_needs_rbac_create_as_well_as_patch(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v"}), "test_manager")
    applied(kube, config_map({"key": "w"}), "test_manager")
    made = kube.call(lambda: set(kube.emulator.requested))
    # As the API server authorizes it: the creating apply is checked for "create" too (support/rbac.py).
    assert {needed(method, path, watch) for _, method, path, watch in made} == {
        ("", "configmaps", "patch"),
        ("", "configmaps", "create"),
    }


def test_reapplying_the_same_object_changes_nothing(kube: KubeServer) -> None:
    first = applied(kube, config_map({"key": "v"}), "test_manager")
    second = applied(kube, config_map({"key": "v"}), "test_manager")
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["metadata"]["managedFields"] == first["metadata"]["managedFields"]


def test_an_apply_body_may_be_yaml(kube: KubeServer) -> None:
    body = yaml.safe_dump(config_map({"key": "from yaml"})).encode()
    req = urllib.request.Request(
        f"{kube.url}{CM}/test-cm?fieldManager=yaml-writer", data=body, method="PATCH"
    )
    req.add_header("Content-Type", APPLY)
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 201
    assert get(kube, f"{CM}/test-cm")["data"] == {"key": "from yaml"}


# -- conflicts --------------------------------------------------------------------------------------


def test_a_second_manager_changing_a_field_gets_a_conflict_naming_field_and_manager(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v"}), "test_manager")
    status, body = apply(kube, config_map({"key": "other"}), "other_manager")
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "test_manager": .data.key'
    assert body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "test_manager"', "field": ".data.key"}
    ]
    assert get(kube, f"{CM}/test-cm")["data"] == {"key": "v"}


def test_kubectl_reports_the_conflict_and_force_conflicts_takes_ownership(
    kubectl: Runner, kube: KubeServer
) -> None:
    applied(kube, config_map({"key": "v", "mine": "x"}), "test_manager")
    manifest = yaml.safe_dump(config_map({"key": "other"}))
    refused = kubectl("apply", "--server-side", "-f", "-", input=manifest, check=False)
    assert refused.returncode != 0
    assert 'conflict with "test_manager": .data.key' in refused.stderr
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest)
    obj = get(kube, f"{CM}/test-cm")
    assert obj["data"] == {"key": "other", "mine": "x"}
    # The forced field moved to kubectl; what the other manager alone set stays its own.
    assert owners(obj, "data", "key") == {"kubectl"}
    assert owners(obj, "data", "mine") == {"test_manager"}


def test_applying_the_same_value_shares_ownership_without_conflict(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v"}), "first")
    obj = applied(kube, config_map({"key": "v"}), "second")
    assert owners(obj, "data", "key") == {"first", "second"}


def test_conflicts_with_several_fields_are_all_listed(kube: KubeServer) -> None:
    applied(kube, config_map({"a": "1", "b": "2"}), "first")
    status, body = apply(kube, config_map({"a": "x", "b": "y"}), "second")
    assert status == 409
    assert body["message"] == 'Apply failed with 2 conflicts: conflicts with "first":\n- .data.a\n- .data.b'
    assert [c["field"] for c in body["details"]["causes"]] == [".data.a", ".data.b"]


# -- removing fields ---------------------------------------------------------------------------------


def test_a_field_a_manager_stops_applying_is_removed_when_it_alone_owned_it(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v", "gone": "soon"}, {"keep": "1", "drop": "2"}), "test_manager")
    obj = applied(kube, config_map({"key": "v"}, {"keep": "1"}), "test_manager")
    assert obj["data"] == {"key": "v"}
    assert obj["metadata"]["labels"] == {"keep": "1"}
    assert entries(obj)[("test_manager", "Apply", "")] == {
        "f:data": {"f:key": {}},
        "f:metadata": {"f:labels": {"f:keep": {}}},
    }


def test_a_co_owned_field_stays_when_one_manager_drops_it(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v", "shared": "s"}), "first")
    applied(kube, config_map({"shared": "s"}), "second")
    obj = applied(kube, config_map({"key": "v"}), "first")
    assert obj["data"] == {"key": "v", "shared": "s"}
    assert owners(obj, "data", "shared") == {"second"}


def test_a_field_an_update_took_over_is_not_removed_by_the_applier(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v", "tuned": "1"}), "test_manager")
    kube.request("PATCH", f"{CM}/test-cm?fieldManager=tuner", {"data": {"tuned": "2"}}, MERGE)
    obj = applied(kube, config_map({"key": "v"}), "test_manager")
    assert obj["data"] == {"key": "v", "tuned": "2"}
    assert owners(obj, "data", "tuned") == {"tuner"}


# -- updates ----------------------------------------------------------------------------------------


def test_other_writes_record_update_managers_from_field_manager_or_user_agent(kube: KubeServer) -> None:
    status, _ = kube.request("POST", f"{CM}?fieldManager=creator", config_map({"key": "v"}))
    assert status == 200
    status, obj = kube.request("PATCH", f"{CM}/test-cm", {"data": {"other": "o"}}, MERGE)
    assert status == 200
    got = {(e["manager"], e["operation"], e["apiVersion"]) for e in obj["metadata"]["managedFields"]}
    # Without ?fieldManager the API server names the manager after the User-Agent's product.
    assert got == {("creator", "Update", "v1"), ("Python-urllib", "Update", "v1")}
    # An Update's entry lists the maps it created as owned too ("."), as the API server's do.
    assert entries(obj)[("creator", "Update", "")]["f:data"] == {".": {}, "f:key": {}}
    assert owners(obj, "data", "other") == {"Python-urllib"}


def test_an_apply_conflicts_with_a_field_an_update_changed(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v"}), "test_manager")
    kube.request("PATCH", f"{CM}/test-cm?fieldManager=editor", {"data": {"key": "edited"}}, MERGE)
    status, body = apply(kube, config_map({"key": "v"}), "test_manager")
    assert status == 409
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "editor" using v1: .data.key'


def test_a_noop_update_adds_no_manager(kube: KubeServer) -> None:
    first = applied(kube, config_map({"key": "v"}), "test_manager")
    _, obj = kube.request("PATCH", f"{CM}/test-cm?fieldManager=idle", {"data": {"key": "v"}}, MERGE)
    assert obj["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert set(entries(obj)) == {("test_manager", "Apply", "")}


def test_managed_fields_are_cleared_by_one_empty_entry_not_by_an_empty_list(kube: KubeServer) -> None:
    applied(kube, config_map({"key": "v"}), "test_manager")
    _, kept = kube.request("PATCH", f"{CM}/test-cm", {"metadata": {"managedFields": []}}, MERGE)
    assert set(entries(kept)) == {("test_manager", "Apply", "")}
    _, cleared = kube.request("PATCH", f"{CM}/test-cm", {"metadata": {"managedFields": [{}]}}, MERGE)
    assert "managedFields" not in cleared["metadata"]
    # Untracked now: updates add no entry, and the first apply hands what was there to "before-first-apply".
    _, updated = kube.request("PATCH", f"{CM}/test-cm?fieldManager=editor", {"data": {"more": "m"}}, MERGE)
    assert "managedFields" not in updated["metadata"]
    obj = applied(kube, config_map({"key": "v2"}), "test_manager", force=True)
    assert set(entries(obj)) == {("before-first-apply", "Update", ""), ("test_manager", "Apply", "")}
    assert owners(obj, "data", "more") == {"before-first-apply"}


def test_managed_fields_a_client_sets_are_stored_as_the_server_encodes_them(kube: KubeServer) -> None:
    first = applied(kube, config_map({"key": "v"}), "test_manager")
    entry = dict(first["metadata"]["managedFields"][0])
    # The same fields, with "." also marking a leaf: the server decodes them and stores its own encoding.
    entry["fieldsV1"] = {"f:data": {".": {}, "f:key": {".": {}}}}
    patch = {"metadata": {"managedFields": [entry]}}
    _, reset = kube.request("PATCH", f"{CM}/test-cm", patch, MERGE)
    assert entries(reset) == {("test_manager", "Apply", ""): {"f:data": {".": {}, "f:key": {}}}}


def test_each_write_re_encodes_only_the_entries_whose_fields_changed(kube: KubeServer) -> None:
    applied(kube, config_map({"a": "1"}), "test_manager")
    kube.request("PATCH", f"{CM}/test-cm?fieldManager=editor", {"data": {"b": "2"}}, MERGE)
    obj = applied(kube, config_map({"a": "1", "c": "3"}), "test_manager")
    assert entries(obj)[("test_manager", "Apply", "")] == {"f:data": {"f:a": {}, "f:c": {}}}
    assert entries(obj)[("editor", "Update", "")] == {"f:data": {"f:b": {}}}


def test_kubectl_moves_a_client_side_applied_object_to_server_side_apply_without_conflicts(
    kubectl: Runner, kube: KubeServer
) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump(config_map({"key": "v", "old": "o"})))
    kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(config_map({"key": "w"})))
    obj = get(kube, f"{CM}/test-cm")
    # The docs' upgrade path: kubectl takes over what client-side apply set, so "old" goes as it would have.
    assert obj["data"] == {"key": "w"}
    assert owners(obj, "data", "key") == {"kubectl"}
    assert "kubectl-client-side-apply" not in {m for m, _, _ in entries(obj)}


def test_the_server_lets_kubectl_take_what_its_client_side_apply_set(kube: KubeServer) -> None:
    annotation = {ssa.LAST_APPLIED: json.dumps(config_map({"key": "v"}))}
    kube.request(
        "POST",
        f"{CM}?fieldManager=kubectl-client-side-apply",
        config_map({"key": "v"}, None, annotations=annotation),
    )
    status, body = apply(kube, config_map({"key": "w"}), "other")
    assert (status, body["details"]["causes"][0]["field"]) == (409, ".data.key")
    obj = applied(kube, config_map({"key": "w"}), "kubectl")
    assert obj["data"] == {"key": "w"}
    # ...and keeps the annotation true, so that a client-side apply still computes the right patch.
    assert json.loads(obj["metadata"]["annotations"][ssa.LAST_APPLIED])["data"] == {"key": "w"}


# -- merge strategy ---------------------------------------------------------------------------------


def test_labels_are_a_map_each_manager_owning_its_keys(kube: KubeServer) -> None:
    applied(kube, config_map({}, {"team": "payments"}), "first")
    obj = applied(kube, config_map({}, {"tier": "gold"}), "second")
    assert obj["metadata"]["labels"] == {"team": "payments", "tier": "gold"}
    assert (owners(obj, "metadata", "labels", "team"), owners(obj, "metadata", "labels", "tier")) == (
        {"first"},
        {"second"},
    )


def test_owner_references_merge_by_uid(kube: KubeServer) -> None:
    ref = {"apiVersion": "federator.io/v1alpha1", "kind": "ReplicationTask", "name": "a", "uid": "u-1"}
    applied(kube, config_map({}, ownerReferences=[ref]), "first")
    obj = applied(kube, config_map({}, ownerReferences=[{**ref, "name": "b", "uid": "u-2"}]), "second")
    assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == ["u-1", "u-2"]
    fields = entries(obj)[("second", "Apply", "")]["f:metadata"]["f:ownerReferences"]
    item: dict[str, Any] = {".": {}, "f:apiVersion": {}, "f:kind": {}, "f:name": {}, "f:uid": {}}
    assert fields == {'k:{"uid":"u-2"}': item}


def test_a_custom_resources_spec_list_is_atomic(kube: KubeServer) -> None:
    applied(kube, task({"editors": [{"name": "a"}]}), "first", path=RT)
    status, body = apply(kube, task({"editors": [{"name": "b"}]}), "second", path=RT)
    assert status == 409
    assert body["details"]["causes"][0]["field"] == ".spec.editors"
    obj = applied(kube, task({"editors": [{"name": "b"}]}), "second", path=RT, force=True)
    assert obj["spec"]["editors"] == [{"name": "b"}]
    assert entries(obj)[("second", "Apply", "")] == {"f:spec": {"f:editors": {}}}


# -- status subresource ---------------------------------------------------------------------------


def test_status_is_applied_through_its_subresource_under_its_own_entry(kube: KubeServer) -> None:
    applied(kube, task({"paused": False}, status={"phase": "ignored"}), "owner", path=RT)
    obj = applied(kube, task(status={"phase": "Running"}), "owner", path=RT, sub="/status")
    assert obj["status"] == {"phase": "Running"}
    assert obj["spec"] == {"paused": False}
    assert entries(obj) == {
        ("owner", "Apply", ""): {"f:spec": {"f:paused": {}}},
        ("owner", "Apply", "status"): {"f:status": {"f:phase": {}}},
    }
    # A spec in a status apply is ignored, and an apply without status leaves the status alone.
    obj = applied(kube, task({"paused": True}, status={"phase": "Done"}), "owner", path=RT, sub="/status")
    assert (obj["spec"], obj["status"]) == ({"paused": False}, {"phase": "Done"})
    obj = applied(kube, task({"paused": False}), "owner", path=RT)
    assert obj["status"] == {"phase": "Done"}


def test_a_status_conflict_names_the_subresource(kube: KubeServer) -> None:
    applied(kube, task({"paused": False}), "owner", path=RT)
    applied(kube, task(status={"phase": "Running"}), "operator", path=RT, sub="/status")
    status, body = apply(kube, task(status={"phase": "Failed"}), "other", path=RT, sub="/status")
    assert status == 409
    assert body["message"] == (
        'Apply failed with 1 conflict: conflict with "operator" with subresource "status": .status.phase'
    )


# -- refused requests -------------------------------------------------------------------------------


def test_an_apply_without_field_manager_is_refused(kube: KubeServer) -> None:
    status, body = kube.request("PATCH", f"{CM}/test-cm", config_map({"key": "v"}), APPLY)
    assert status == 422
    assert "fieldManager: Required value: is required for apply patch" in body["message"]
    assert kube.request("GET", f"{CM}/test-cm")[0] == 404


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"apiVersion": "v2"}, "Incorrect version specified in apply patch"),
        ({"kind": "Secret"}, "kind"),
        ({"metadata": {"name": "other"}}, "does not match the name on the URL"),
        ({"metadata": {"name": "test-cm", "managedFields": []}}, "managedFields must be nil"),
    ],
)
def test_an_apply_body_must_match_the_url_and_carry_no_managed_fields(
    kube: KubeServer, change: dict[str, Any], words: str
) -> None:
    body = {**config_map({"key": "v"}), **change}
    status, answer = kube.request("PATCH", f"{CM}/test-cm?fieldManager=m", body, APPLY)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert words in answer["message"]


def test_force_is_only_for_apply(kube: KubeServer) -> None:
    kube.request("POST", CM, config_map({"key": "v"}))
    status, body = kube.request("PATCH", f"{CM}/test-cm?force=true", {"data": {"key": "w"}}, MERGE)
    assert status == 422
    assert "force: Forbidden" in body["message"]


def test_a_stale_resource_version_in_an_apply_is_a_conflict(kube: KubeServer) -> None:
    obj = applied(kube, config_map({"key": "v"}), "test_manager")
    stale = config_map({"key": "w"}, resourceVersion=str(int(obj["metadata"]["resourceVersion"]) - 1))
    status, body = apply(kube, stale, "test_manager")
    assert status == 409
    assert "the object has been modified" in body["message"]


# -- the pure functions ----------------------------------------------------------------------------


def test_field_paths_print_as_the_api_server_prints_them() -> None:
    path = ("f:metadata", "f:ownerReferences", 'k:{"uid":"u-1"}', "f:name")
    assert ssa.describe_path(path) == '.metadata.ownerReferences[uid="u-1"].name'
    assert ssa.describe_path(("f:metadata", "f:finalizers", 'v:"a/b"')) == '.metadata.finalizers[="a/b"]'


def test_managed_fields_survive_an_encode_decode_round_trip() -> None:
    managed = ssa.Managed()
    me = ssa.Manager("m", ssa.APPLY)
    managed.fields[me] = {("f:data", "f:a"), ("f:data",), ("f:spec", "f:list")}
    managed.versions[me], managed.times[me] = "v1", "2026-01-01T00:00:00Z"
    encoded = ssa.encode(managed)
    assert encoded[0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}, "f:spec": {"f:list": {}}}
    assert ssa.decode({"metadata": {"managedFields": encoded}}) == managed


def test_an_http_error_body_is_a_status(kube: KubeServer) -> None:
    req = urllib.request.Request(f"{kube.url}{CM}/x?fieldManager=m", data=b"{: nope", method="PATCH")
    req.add_header("Content-Type", APPLY)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(req, timeout=10)
    with raised.value as answer:
        assert answer.code == 400
        assert json.load(answer)["message"].startswith("error decoding YAML")
