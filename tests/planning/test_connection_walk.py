"""One walk finds every connection of a spec, of every kind, with its field path and its role; and puts
another connection in one's place without touching the rest. The expectation is built from the models'
own fields: a connection field added to a model that the walk does not know fails here."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from federator_contract.api.base import EndpointConnection
from federator_contract.api.connections import (
    Connection,
    ConnectionSite,
    Role,
    Spec,
    Step,
    connections,
    with_connection,
)
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import BY_KIND
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONNECTION_TYPES = typing.get_args(Connection)
SPEC_TYPES = (ReplicationTaskSpec, FailoverGroupSpec, ServiceBusMirrorSpec)


def secret(name: str) -> dict[str, Any]:
    return {"secretRef": {"name": name}}


def hub(name: str) -> dict[str, Any]:
    return {"connection": secret(name), "eventHubName": "orders"}


def bus(name: str) -> dict[str, Any]:
    return {"connection": secret(name), "queueName": "orders"}


# A task with every endpoint kind in every place an endpoint can be.
EVERY_PLACE = ReplicationTaskSpec.model_validate(
    {
        "source": {"eventHub": hub("src")},
        "targets": [
            {"name": "hub", "eventHub": hub("t0")},
            {"name": "bus", "serviceBus": bus("t1")},
            {"name": "db", "postgres": {"connectionSecretRef": {"name": "pg"}, "table": "orders"}},
        ],
        "unrouted": {"serviceBus": bus("unrouted")},
        "deadLetter": {"eventHub": hub("dead")},
        "checkpointTranslation": {
            "consumerGroups": ["app"],
            "target": "hub",
            "checkpointStore": {"containerName": "ckpt", "connection": secret("store")},
            "targetCheckpointStore": {"containerName": "ckpt", "connection": secret("target-store")},
        },
    }
)
SERVICE_BUS_SOURCE = ReplicationTaskSpec.model_validate(
    {"source": {"serviceBus": bus("src")}, "targets": [{"name": "hub", "eventHub": hub("t0")}]}
)


def example_specs() -> list[Spec]:
    found: list[Spec] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            kind = BY_KIND.get((doc or {}).get("kind", ""))
            # A ReplicationApplication has no connections: its members' are theirs.
            if kind is not None and issubclass(kind.spec, SPEC_TYPES):
                spec = kind.spec.model_validate(doc["spec"])
                assert isinstance(spec, SPEC_TYPES)
                found.append(spec)
    return found


SAMPLES: list[Spec] = [EVERY_PLACE, SERVICE_BUS_SOURCE, *example_specs()]


def connections_by_type(value: Any, steps: tuple[Step, ...] = ()) -> dict[tuple[Step, ...], Connection]:
    """Every connection model anywhere in ``value``, found by its type alone."""
    if isinstance(value, CONNECTION_TYPES):
        return {steps: value}
    found: dict[tuple[Step, ...], Connection] = {}
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            found |= connections_by_type(getattr(value, name), (*steps, name))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found |= connections_by_type(item, (*steps, i))
    return found


def connection_fields(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[tuple[type[BaseModel], str]]:
    """(model, field) of every field of ``model`` and the models below it typed as a connection."""
    if model in seen:
        return set()
    seen.add(model)
    found: set[tuple[type[BaseModel], str]] = set()
    for name, info in model.model_fields.items():
        for inner in _types_in(info.annotation):
            if inner in CONNECTION_TYPES:
                found.add((model, name))
            elif isinstance(inner, type) and issubclass(inner, BaseModel):
                found |= connection_fields(inner, seen)
    return found


def _types_in(annotation: Any) -> list[Any]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return _types_in(args[0])
    if args and typing.get_origin(annotation) in (list, dict, typing.Union, types.UnionType):
        return [t for arg in args for t in _types_in(arg)]
    return [annotation]


def holder_field(spec: BaseModel, site: ConnectionSite) -> tuple[type[BaseModel], str]:
    value: Any = spec
    for step in site.steps[:-1]:
        value = value[step] if isinstance(step, int) else getattr(value, step)
    last = site.steps[-1]
    assert isinstance(last, str)
    return type(value), last


EXPECTED_ROLES: dict[tuple[Step, ...], Role] = {
    ("source",): "source",
    ("targets",): "target",
    ("unrouted",): "unrouted",
    ("dead_letter",): "deadLetter",
    ("checkpoint_translation", "checkpoint_store"): "checkpointStore",
    ("checkpoint_translation", "target_checkpoint_store"): "targetCheckpointStore",
    ("members",): "member",
}


@pytest.mark.parametrize("spec", SAMPLES, ids=lambda s: type(s).__name__)
def test_the_walk_finds_every_connection_the_models_hold(spec: Spec) -> None:
    walked = {site.steps: site.connection for site in connections(spec)}
    assert walked == connections_by_type(spec)


def test_every_connection_field_of_every_kind_is_walked() -> None:
    declared: set[tuple[type[BaseModel], str]] = set()
    seen: set[type[BaseModel]] = set()
    for spec_type in SPEC_TYPES:
        declared |= connection_fields(spec_type, seen)
    walked = {holder_field(spec, site) for spec in SAMPLES for site in connections(spec)}
    missing = sorted(f"{model.__name__}.{name}" for model, name in declared - walked)
    assert not missing, f"connection fields the walk (or these samples) does not know: {missing}"


def test_each_connection_has_its_field_path_as_written_and_its_role() -> None:
    found = [(site.field_path, site.role) for site in connections(EVERY_PLACE)]
    assert found == [
        ("spec.source.eventHub.connection", "source"),
        ("spec.targets[0].eventHub.connection", "target"),
        ("spec.targets[1].serviceBus.connection", "target"),
        ("spec.unrouted.serviceBus.connection", "unrouted"),
        ("spec.deadLetter.eventHub.connection", "deadLetter"),
        ("spec.checkpointTranslation.checkpointStore.connection", "checkpointStore"),
        ("spec.checkpointTranslation.targetCheckpointStore.connection", "targetCheckpointStore"),
    ]
    for spec in SAMPLES:
        for site in connections(spec):
            prefix = next(p for p in EXPECTED_ROLES if site.steps[: len(p)] == p)
            assert site.role == EXPECTED_ROLES[prefix], site.field_path
            assert site.is_destination == (site.role in {"target", "unrouted", "deadLetter"})


def test_a_group_and_a_mirror_walk_their_members() -> None:
    groups = [s for s in SAMPLES if isinstance(s, FailoverGroupSpec | ServiceBusMirrorSpec)]
    assert groups, "the examples hold FailoverGroups and ServiceBusMirrors"
    for spec in groups:
        paths = [site.field_path for site in connections(spec)]
        assert paths == [f"spec.members[{i}].connection" for i in range(len(spec.members))]


def test_a_connection_is_replaced_in_a_copy_and_nothing_else_changes() -> None:
    path = "spec.targets[1].serviceBus.connection"
    site = next(s for s in connections(EVERY_PLACE) if s.field_path == path)
    other = EndpointConnection.model_validate(secret("elsewhere"))
    changed = with_connection(EVERY_PLACE, site.steps, other)
    target = changed.targets[1].service_bus
    assert target is not None and target.connection is other
    assert target.queue_name == "orders"
    assert changed.targets[0] is EVERY_PLACE.targets[0] and changed.source is EVERY_PLACE.source
    original = EVERY_PLACE.targets[1].service_bus
    assert original is not None and original.connection.secret_ref is not None
    assert original.connection.secret_ref.name == "t1", "the spec walked stays as it was"
    assert [s.connection for s in connections(changed)].count(other) == 1


def test_replacing_at_a_path_that_names_no_connection_fails_loudly() -> None:
    with pytest.raises(ValueError, match="empty path"):
        with_connection(EVERY_PLACE, (), EndpointConnection.model_validate(secret("x")))
