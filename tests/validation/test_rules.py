"""Cross-field and transition rules behave as the API server would apply them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from validation_helpers import task

from federator.validation import validate_object


def _messages(obj: Any, old: Any = None) -> list[str]:
    return [str(p) for p in validate_object(obj, old)[1]]


def test_a_minimal_task_is_valid() -> None:
    assert _messages(task()) == []


def test_changing_the_source_event_hub_is_refused() -> None:
    old = task()
    new = copy.deepcopy(old)
    new["spec"]["source"]["eventHub"]["eventHubName"] = "orders-v2"
    assert _messages(new, old) == ["spec.source.eventHub.eventHubName: eventHubName is immutable"]


def test_changing_the_consumer_group_is_refused_even_from_its_default() -> None:
    old = task()
    new = copy.deepcopy(old)
    new["spec"]["source"]["eventHub"]["consumerGroup"] = "mine"
    assert _messages(new, old) == ["spec.source.eventHub.consumerGroup: consumerGroup is immutable"]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("queueName", "queueName is immutable"),
        ("topicName", "topicName is immutable"),
        ("subscriptionName", "subscriptionName is immutable"),
    ],
)
def test_changing_the_service_bus_source_entity_is_refused(field: str, message: str) -> None:
    queue = {"connection": {"emulator": {"namespace": "a"}}, "queueName": "orders"}
    topic = {
        "connection": {"emulator": {"namespace": "a"}},
        "topicName": "audit",
        "subscriptionName": "to-stream",
    }
    old = task(source={"serviceBus": queue if field == "queueName" else topic})
    new = copy.deepcopy(old)
    new["spec"]["source"]["serviceBus"][field] += "-v2"
    assert _messages(new, old) == [f"spec.source.serviceBus.{field}: {message}"]


def test_changing_a_target_is_allowed() -> None:
    old = task()
    new = copy.deepcopy(old)
    new["spec"]["targets"][0]["eventHub"]["eventHubName"] = "orders-copy"
    assert _messages(new, old) == []


def test_changing_the_checkpoint_is_refused_but_setting_it_first_is_allowed() -> None:
    old = task()
    first = task(runtime={"checkpoint": {"uri": "file:///tmp/ck"}})
    assert _messages(first, old) == []
    moved = task(runtime={"checkpoint": {"uri": "file:///tmp/elsewhere"}})
    assert _messages(moved, first) == ["spec.runtime.checkpoint: checkpoint is immutable"]


def test_mirror_pattern_is_immutable() -> None:
    members = [{"name": n, "connection": {"emulator": {"namespace": n}}} for n in ("a", "b")]
    old = {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ServiceBusMirror",
        "metadata": {"name": "m"},
        "spec": {"pattern": "allActive", "topicName": "t", "members": members},
    }
    new = copy.deepcopy(old)
    new["spec"]["pattern"] = "activePassive"
    new["spec"]["activePassive"] = {"primaryMember": "a", "timeToLiveSeconds": 60}
    assert _messages(new, old) == ["spec.pattern: pattern is immutable"]


def test_dead_letter_target_satisfies_a_validating_editor() -> None:
    dead_letter = {"eventHub": {"connection": {"emulator": {"namespace": "a"}}, "eventHubName": "dlq"}}
    editors = [{"validate": {"jsonSchema": {"type": "object"}}}]
    assert _messages(task(editors=editors)) == [
        "spec: an editor dead-letters events, so spec.deadLetter must be set"
    ]
    assert _messages(task(editors=editors, deadLetter=dead_letter)) == []
    dropping = [{"validate": {"jsonSchema": {"type": "object"}, "onInvalid": "drop"}}]
    assert _messages(task(editors=dropping)) == []


def test_problems_never_echo_a_secret_value() -> None:
    secret = "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=c3VwZXJzZWNyZXQ="
    spoiled = task(editors=[{"enrich": {"properties": {"upstream": secret}}}])
    messages = _messages(spoiled)
    assert messages and all("c3VwZXJzZWNyZXQ" not in m for m in messages)


def test_non_federator_documents_are_not_checked() -> None:
    kind, problems = validate_object({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    assert kind is None and problems == []
