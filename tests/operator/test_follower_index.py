"""The index of which FailoverGroups each ReplicationTask follows (handlers/followers.py): kopf indexes every
watch event of a task, a status write included, and the spec it reads changes only with the generation."""

from __future__ import annotations

from typing import Any

import pytest

from federator.handlers import followers
from federator.handlers.context import ObjectState
from federator.handlers.followers import followed_at


def spec(group: str) -> dict[str, Any]:
    source = {"connection": {"failoverGroupRef": {"name": group}}, "queueName": "orders"}
    target = {"connection": {"secretRef": {"name": "weu-conn"}}, "eventHubName": "archive"}
    return {"source": {"serviceBus": source}, "targets": [{"name": "archive", "eventHub": target}]}


def test_a_task_spec_is_read_once_per_generation_and_again_when_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[dict[str, Any]] = []
    real = followers.followed_in

    def counted(spec: Any) -> list[str]:
        read.append(dict(spec))
        return real(spec)

    monkeypatch.setattr(followers, "followed_in", counted)
    state = ObjectState()
    for _ in range(3):  # the watch events of one generation: creation, kopf's annotations, status writes
        assert followed_at(state, {"generation": 1}, spec("billing")) == ["billing"]
    assert len(read) == 1

    assert followed_at(state, {"generation": 2}, spec("audit")) == ["audit"]
    assert len(read) == 2


def test_nothing_is_kept_for_a_task_the_operator_does_not_know() -> None:
    """No state: not met yet, or forgotten after its deletion (kept state must not outlive it)."""
    assert followed_at(None, {"generation": 1}, spec("billing")) == ["billing"]
    assert followed_at(None, {"generation": 1}, {"targets": 3}) == []


def test_a_spec_naming_no_group_follows_none_without_being_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    class Refusing:
        @staticmethod
        def model_validate(value: object) -> None:
            raise AssertionError("validated a spec that names no FailoverGroup")

    monkeypatch.setattr(followers, "ReplicationTaskSpec", Refusing)
    unfollowing = spec("billing")
    unfollowing["source"]["serviceBus"]["connection"] = {"secretRef": {"name": "weu-conn"}}
    assert followed_at(None, {"generation": 1}, unfollowing) == []


@pytest.mark.parametrize("key", ["failoverGroupRef", "failover_group_ref"])
def test_a_group_named_under_either_spelling_the_models_accept_is_followed(key: str) -> None:
    following = spec("billing")
    following["source"]["serviceBus"]["connection"] = {key: {"name": "audit"}}
    assert followed_at(None, {"generation": 1}, following) == ["audit"]
