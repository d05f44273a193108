"""A document that looks like a Federator resource but would not be served is an error with a hint,
not a document of another project to skip."""

from __future__ import annotations

from typing import Any

import pytest
from validation_helpers import problems, task

from federator.validation import check_object


def with_type(api_version: Any, kind: Any) -> dict[str, Any]:
    obj = task()
    for key, value in (("apiVersion", api_version), ("kind", kind)):
        if value is None:
            obj.pop(key)
        else:
            obj[key] = value
    return obj


@pytest.mark.parametrize(
    ("api_version", "kind", "message"),
    [
        (
            None,
            "ReplicationTask",
            "apiVersion: required field is missing; "
            "did you mean apiVersion: federator.io/v1alpha1 and kind: ReplicationTask?",
        ),
        (
            "federater.io/v1alpha1",
            "ReplicationTask",
            "apiVersion: unknown API group 'federater.io'; "
            "did you mean apiVersion: federator.io/v1alpha1 and kind: ReplicationTask?",
        ),
        (
            "federator.com/v1alpha1",
            "Widget",
            "apiVersion: unknown API group 'federator.com'; did you mean apiVersion: federator.io/v1alpha1?",
        ),
        (
            "v1",
            "FailoverGroup",
            "apiVersion: 'v1' does not serve FailoverGroup; "
            "did you mean apiVersion: federator.io/v1alpha1 and kind: FailoverGroup?",
        ),
        (
            "federator.io",
            "ReplicationTask",
            "apiVersion: unsupported version 'federator.io'; use federator.io/v1alpha1",
        ),
        (
            "federator.io/v1alpha1",
            "replicationtask",
            "kind: unknown kind 'replicationtask' in federator.io "
            "(known: FailoverGroup, ReplicationApplication, ReplicationTask, ServiceBusMirror); "
            "did you mean ReplicationTask?",
        ),
        (
            "federator.io/v1alpha1",
            "ServiceBusMirrors",
            "kind: unknown kind 'ServiceBusMirrors' in federator.io "
            "(known: FailoverGroup, ReplicationApplication, ReplicationTask, ServiceBusMirror); "
            "did you mean ServiceBusMirror?",
        ),
        (
            "federator.io/v1alpha1",
            None,
            "kind: required field is missing "
            "(known: FailoverGroup, ReplicationApplication, ReplicationTask, ServiceBusMirror)",
        ),
        (
            None,
            "ReplicationTsk",
            "apiVersion: required field is missing; "
            "did you mean apiVersion: federator.io/v1alpha1 and kind: ReplicationTask?",
        ),
    ],
)
def test_a_near_miss_is_refused_with_a_hint(api_version: Any, kind: Any, message: str) -> None:
    assert problems(with_type(api_version, kind)) == [message]


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("v1", "Secret"),
        ("apps/v1", "Deployment"),
        # Another project's kind of the same name, in its own group (AWS Controllers for Kubernetes).
        ("dms.services.k8s.aws/v1alpha1", "ReplicationTask"),
        (None, "Kustomization"),
    ],
)
def test_other_projects_documents_are_skipped(api_version: Any, kind: Any) -> None:
    verdict = check_object(with_type(api_version, kind))
    assert (verdict.kind, verdict.problems, verdict.ours) == (None, [], False)
