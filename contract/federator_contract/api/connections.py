"""Every connection of a spec, in one typed walk: where it sits (as users see the field), what it is for,
and the connection model itself; and one typed way to put another connection in its place.

Planning (workload identity, local-only connections), FailoverGroup following (a group's member
substituted for `failoverGroupRef`), validation and credential scoping all walk a spec through here, so a
new endpoint kind is taught in one place (a test enumerates the models' fields to keep this true).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import BaseModel

from federator_contract.api.base import EndpointConnection, FailoverGroupReference, NamespaceConnection
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.replicationtask import Endpoint, ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.api.translation import BlobStoreConnection

Connection = EndpointConnection | NamespaceConnection | BlobStoreConnection
Role = Literal[
    "source", "target", "unrouted", "deadLetter", "checkpointStore", "targetCheckpointStore", "member"
]
"""What a connection is for: `source` is read from (it follows a group's consumers), the three kinds of
destination are written to (they follow a group's producers), the checkpoint stores hold consumers'
checkpoints (Blob Storage), a `member` is a namespace of a FailoverGroup or ServiceBusMirror."""
DESTINATIONS: frozenset[Role] = frozenset({"target", "unrouted", "deadLetter"})

Step = str | int
"""A Python attribute name, or an index into a list."""
Spec = ReplicationTaskSpec | FailoverGroupSpec | ServiceBusMirrorSpec
SPEC_TYPES = (ReplicationTaskSpec, FailoverGroupSpec, ServiceBusMirrorSpec)
S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True)
class ConnectionSite:
    """One connection of a spec and where it sits."""

    steps: tuple[Step, ...]
    """Attribute names and list indexes from the spec down to the connection (`with_connection` follows
    them)."""
    field_path: str
    """The field as users write it, e.g. `spec.targets[0].eventHub.connection`."""
    role: Role
    connection: Connection

    @property
    def is_destination(self) -> bool:
        return self.role in DESTINATIONS

    @property
    def followed_group(self) -> FailoverGroupReference | None:
        """The FailoverGroup whose member this connection stands for (task endpoints only)."""
        connection = self.connection
        return connection.failover_group_ref if isinstance(connection, EndpointConnection) else None


def connections(spec: Spec) -> Iterator[ConnectionSite]:
    """Every connection of ``spec``, in document order."""
    if isinstance(spec, ReplicationTaskSpec):
        yield from _task(spec)
    else:
        for i in range(len(spec.members)):
            yield _site(spec, ("members", i, "connection"), "member")


def with_connection(spec: S, steps: tuple[Step, ...], connection: Connection) -> S:
    """A copy of ``spec`` with the connection at ``steps`` (a `ConnectionSite.steps`) replaced. Copies
    are made with `model_copy` along the path: every other field is the very same object."""
    if not steps:
        raise ValueError("with_connection: an empty path names no connection")
    head, rest = steps[0], steps[1:]
    if not isinstance(head, str):
        raise ValueError(f"with_connection: expected an attribute name, found index {head}")
    child = getattr(spec, head)
    if not rest:
        return spec.model_copy(update={head: connection})
    if isinstance(rest[0], int):
        items = list(child)
        index, rest = rest[0], rest[1:]
        items[index] = with_connection(items[index], rest, connection) if rest else connection
        return spec.model_copy(update={head: items})
    return spec.model_copy(update={head: with_connection(child, rest, connection)})


def _task(spec: ReplicationTaskSpec) -> Iterator[ConnectionSite]:
    if spec.source.event_hub is not None:
        yield _site(spec, ("source", "event_hub", "connection"), "source")
    if spec.source.service_bus is not None:
        yield _site(spec, ("source", "service_bus", "connection"), "source")
    endpoints: list[tuple[tuple[Step, ...], Role, Endpoint]] = [
        (("targets", i), "target", target) for i, target in enumerate(spec.targets)
    ]
    if spec.unrouted is not None:
        endpoints.append((("unrouted",), "unrouted", spec.unrouted))
    if spec.dead_letter is not None:
        endpoints.append((("dead_letter",), "deadLetter", spec.dead_letter))
    for steps, role, endpoint in endpoints:
        # A PostgreSQL endpoint has a connection URI in a Secret, not a namespace connection.
        if endpoint.event_hub is not None:
            yield _site(spec, (*steps, "event_hub", "connection"), role)
        if endpoint.service_bus is not None:
            yield _site(spec, (*steps, "service_bus", "connection"), role)
    translation = spec.checkpoint_translation
    if translation is not None:
        yield _site(spec, ("checkpoint_translation", "checkpoint_store", "connection"), "checkpointStore")
        if translation.target_checkpoint_store is not None:
            steps = ("checkpoint_translation", "target_checkpoint_store", "connection")
            yield _site(spec, steps, "targetCheckpointStore")


def _site(spec: BaseModel, steps: tuple[Step, ...], role: Role) -> ConnectionSite:
    value: object = spec
    path = "spec"
    for step in steps:
        if isinstance(step, int):
            assert isinstance(value, list)
            value, path = value[step], f"{path}[{step}]"
        else:
            assert isinstance(value, BaseModel)
            alias = type(value).model_fields[step].alias or step
            value, path = getattr(value, step), f"{path}.{alias}"
    if not isinstance(value, EndpointConnection | NamespaceConnection | BlobStoreConnection):
        raise TypeError(f"{path} is a {type(value).__name__}, not a connection")
    return ConnectionSite(steps, path, role, value)
