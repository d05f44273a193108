"""`metadata` is checked as the API server checks ObjectMeta, and names are bounded by what the kind's
children need (a label value, a pod name)."""

from __future__ import annotations

from typing import Any

import pytest
from validation_helpers import group, problems, spillover_mirror, task

from federator.validation.metadata import ANNOTATIONS_LIMIT


def with_meta(**meta: Any) -> dict[str, Any]:
    obj = task()
    obj["metadata"] = {"name": "t", **meta}
    return obj


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (
            {"namespace": "Team_A"},
            "metadata.namespace: 'Team_A' is not a lowercase DNS label: lowercase letters, digits and '-' "
            "starting and ending with a letter or digit",
        ),
        ({"namespace": "n" * 64}, "metadata.namespace: must have at most 63 characters (got 64)"),
        (
            {"name": "Orders"},
            "metadata.name: 'Orders' is not a lowercase DNS subdomain: lowercase letters, digits and '-', "
            "dot-separated, starting and ending with a letter or digit",
        ),
        (
            {"labels": {"team": "platform team"}},
            "metadata.labels.team: 'platform team' is not a valid label value: at most 63 characters, "
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        ),
        ({"labels": {"tier": 1}}, "metadata.labels.tier: must be a string (got int): quote the value"),
        (
            {"labels": {"-team": "a"}},
            "metadata.labels: key '-team' is not a qualified name: its name must have at most 63 characters: "
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        ),
        (
            {"annotations": {"Example.com/owner": "a"}},
            "metadata.annotations: key 'Example.com/owner' is not a qualified name: "
            "its prefix must be a lowercase DNS subdomain of at most 253 characters",
        ),
        (
            {"annotations": {"note": None}},
            "metadata.annotations.note: must be a string (got NoneType): quote the value",
        ),
        (
            {"lables": {"a": "b"}},
            "metadata.lables: unknown field (known: annotations, creationTimestamp, "
            "deletionGracePeriodSeconds, deletionTimestamp, finalizers, generateName, generation, labels, "
            "managedFields, name, namespace, ownerReferences, resourceVersion, selfLink, uid)",
        ),
        ({"generation": "1"}, "metadata.generation: must be of type integer (got str)"),
        ({"labels": ["a"]}, "metadata.labels: must be of type object (got list)"),
    ],
)
def test_metadata_is_checked_as_the_api_server_does(meta: dict[str, Any], message: str) -> None:
    assert problems(with_meta(**meta)) == [message]


def test_annotations_are_bounded_in_total_size() -> None:
    half = "x" * (ANNOTATIONS_LIMIT // 2)
    assert problems(with_meta(annotations={"a": half, "b": half})) == [
        f"metadata.annotations: total size {ANNOTATIONS_LIMIT + 2} bytes exceeds the limit of "
        f"{ANNOTATIONS_LIMIT} (256 KiB)"
    ]
    assert problems(with_meta(annotations={"a": half[:-1], "b": half[:-1]})) == []


def test_valid_metadata_passes() -> None:
    meta = {
        "namespace": "team-a",
        "labels": {"app.kubernetes.io/name": "orders", "empty": ""},
        "annotations": {"example.com/owner": "Team A <a@example.com>"},
        "finalizers": ["example.com/cleanup"],
    }
    assert problems(with_meta(**meta)) == []


@pytest.mark.parametrize(
    ("obj", "limit", "message"),
    [
        (task, 50, "a ReplicationTask name has at most 50 characters"),  # `<name>-driver` is a pod name
        (spillover_mirror, 24, "a ServiceBusMirror name has at most 24 characters"),  # tasks `<m>-<a>-<b>`
        (group, 63, "a FailoverGroup name has at most 63 characters"),  # a label value on its ConfigMap
    ],
)
def test_names_leave_room_for_what_the_kind_derives_from_them(obj: Any, limit: int, message: str) -> None:
    assert problems(obj("n" * limit)) == []
    assert problems(obj("n" * (limit + 1))) == [f"metadata.name: {message}"]
