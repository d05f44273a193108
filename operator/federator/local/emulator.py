"""Which emulator namespaces and entities a local run needs, derived from the tasks' endpoints.

Manifests name emulator namespaces and entities but not the entities' own settings (on Azure a partition
count belongs to the event hub, not to a task), so derived entities get defaults: event hubs have
`DEFAULT_PARTITION_COUNT` partitions, queues and topics the emulator's defaults. An `--emulator-config`
file (the emulator's own YAML) declares entities with other settings; what it declares wins, and what the
tasks need besides (consumer groups, subscriptions, whole entities) is added to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from federator.failover.probes import EntityRef
from federator.failover.rounds import probe_entity
from federator.provision.model import queue_path, subscription_path
from federator_contract.api.base import EndpointConnection
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.replicationtask import Endpoint, ReplicationTaskSpec
from federator_contract.emulatorconfig import (
    EmulatorConfig,
    EventHubConfig,
    NamespaceConfig,
    QueueConfig,
    SubscriptionConfig,
    TopicConfig,
)

DEFAULT_PARTITION_COUNT = 4
"""Partitions of a derived event hub: enough to show partition-to-partition mapping and per-key order
across partitions, small enough for a laptop."""

EntityKind = Literal["event hub", "queue", "topic"]


@dataclass(frozen=True)
class EndpointUse:
    """One endpoint of a task: where in the spec, how it connects, and which entity it names."""

    path: str
    connection: EndpointConnection
    kind: EntityKind | None  # None: not a messaging entity (a PostgreSQL table)
    name: str = ""
    consumer_group: str | None = None
    subscription: str | None = None
    duplicate_detection: bool = False
    """Effectively-once to Service Bus relies on the entity's duplicate detection (docs/replication.md)."""


def endpoint_uses(spec: ReplicationTaskSpec) -> list[EndpointUse]:
    """The source and every destination (targets, unrouted, dead letter) of a task."""
    uses: list[EndpointUse] = []
    if (hub := spec.source.event_hub) is not None:
        uses.append(
            EndpointUse("spec.source", hub.connection, "event hub", hub.event_hub_name, hub.consumer_group)
        )
    elif (bus := spec.source.service_bus) is not None:
        if bus.queue_name is not None:
            uses.append(EndpointUse("spec.source", bus.connection, "queue", bus.queue_name))
        else:
            uses.append(
                EndpointUse(
                    "spec.source",
                    bus.connection,
                    "topic",
                    str(bus.topic_name),
                    subscription=bus.subscription_name,
                )
            )
    destinations: list[tuple[str, Endpoint]] = [(f"spec.targets[{i}]", t) for i, t in enumerate(spec.targets)]
    destinations += [("spec.unrouted", e) for e in [spec.unrouted] if e is not None]
    destinations += [("spec.deadLetter", e) for e in [spec.dead_letter] if e is not None]
    dedupe = spec.delivery.effectively_once
    for path, endpoint in destinations:
        if (target_hub := endpoint.event_hub) is not None:
            uses.append(EndpointUse(path, target_hub.connection, "event hub", target_hub.event_hub_name))
        elif (target_bus := endpoint.service_bus) is not None:
            kind: EntityKind = "queue" if target_bus.queue_name is not None else "topic"
            name = target_bus.queue_name or str(target_bus.topic_name)
            uses.append(EndpointUse(path, target_bus.connection, kind, name, duplicate_detection=dedupe))
    return uses + translation_uses(spec)


def translation_uses(spec: ReplicationTaskSpec) -> list[EndpointUse]:
    """The applications' consumer groups a checkpoint translation carries over exist on both hubs; the
    translator reads the target through its index consumer group."""
    translation, source = spec.checkpoint_translation, spec.source.event_hub
    if translation is None or source is None:
        return []
    named = translation.target
    targets = [t.event_hub for t in spec.targets if t.event_hub is not None and t.name == (named or t.name)]
    if len(targets) != 1 or (target := targets[0]) is None:
        return []  # validation names the problem
    path, groups = "spec.checkpointTranslation", translation.consumer_groups
    uses = [EndpointUse(path, source.connection, "event hub", source.event_hub_name, g) for g in groups]
    return uses + [
        EndpointUse(path, target.connection, "event hub", target.event_hub_name, g)
        for g in [*groups, translation.index_consumer_group]
    ]


def group_uses(spec: FailoverGroupSpec) -> list[EndpointUse]:
    """What a failover group reads on each member: the probe's entity and the drain entities."""
    entities = [probe_entity(spec), *(EntityRef.of(e) for e in spec.failback.drain_entities)]
    uses: list[EndpointUse] = []
    for member in spec.members:
        connection = EndpointConnection.model_validate(
            member.connection.model_dump(by_alias=True, exclude_none=True)
        )
        path = f"spec.members[{member.name}]"
        for entity in entities:
            if entity.kind == "eventHub":
                uses.append(EndpointUse(path, connection, "event hub", entity.name, entity.consumer_group))
            elif entity.kind == "queue":
                uses.append(EndpointUse(path, connection, "queue", entity.name))
            else:
                uses.append(
                    EndpointUse(path, connection, "topic", entity.name, subscription=entity.subscription)
                )
    return uses


class EmulatorLayout:
    """The emulator namespaces and entities of a run, built task by task (the first to name an entity
    decides its kind; a later task that names it as another kind conflicts and does not run)."""

    def __init__(self, declared: EmulatorConfig | None = None) -> None:
        self._namespaces: dict[str, NamespaceConfig] = {}
        self._declared: set[tuple[str, str]] = set()
        for namespace in declared.namespaces if declared else []:
            copy = namespace.model_copy(deep=True)
            self._namespaces[namespace.name] = copy
            self._declared |= {(namespace.name, e.name.lower()) for e in _entities(copy)}
        self._base = declared

    @property
    def empty(self) -> bool:
        return not self._namespaces

    def conflicts(self, uses: Iterable[EndpointUse]) -> list[str]:
        """Why these endpoints cannot share the emulator with what is already laid out (empty: they can)."""
        kinds = {
            (ns, e.name.lower()): (_kind_of(e), e.name)
            for ns, namespace in self._namespaces.items()
            for e in _entities(namespace)
        }
        problems: list[str] = []
        for use in _emulator_uses(uses):
            assert use.kind is not None
            namespace = _namespace_of(use)
            existing = kinds.setdefault((namespace, use.name.lower()), (use.kind, use.name))
            if existing[0] != use.kind:
                problems.append(
                    f"{use.path}: emulator namespace {namespace!r} cannot hold both {existing[0]} "
                    f"{existing[1]!r} and {use.kind} {use.name!r} (event hubs, queues and topics share "
                    "one set of names); rename one or put it in another emulator namespace"
                )
        return problems

    def add(self, uses: Iterable[EndpointUse], provisioned: Collection[tuple[str, str]] = ()) -> None:
        """Lay out the entities of endpoints that `conflicts` accepted, except those in ``provisioned``
        ((emulator namespace, `queues/<q>` or `topics/<t>/subscriptions/<s>`)): a mirror creates them
        through the management plane once the emulator runs, and must find them absent to own them."""
        for use in _emulator_uses(uses):
            namespace = self._namespaces.setdefault(
                _namespace_of(use), NamespaceConfig(name=_namespace_of(use))
            )
            declared = (namespace.name, use.name.lower()) in self._declared
            entity = _find(namespace, use.name)
            if use.kind == "queue" and (namespace.name, queue_path(use.name)) in provisioned:
                continue
            if (
                use.subscription
                and (namespace.name, subscription_path(use.name, use.subscription)) in provisioned
            ):
                use = dataclasses.replace(use, subscription=None)
            if use.kind == "event hub":
                hub = entity if isinstance(entity, EventHubConfig) else None
                if hub is None:
                    hub = EventHubConfig(name=use.name, partition_count=DEFAULT_PARTITION_COUNT)
                    namespace.event_hubs.append(hub)
                if use.consumer_group and use.consumer_group not in hub.all_consumer_groups:
                    hub.consumer_groups.append(use.consumer_group)
            elif use.kind == "queue":
                if entity is None:
                    namespace.queues.append(QueueConfig(name=use.name))
                    entity = namespace.queues[-1]
                if use.duplicate_detection and not declared and isinstance(entity, QueueConfig):
                    entity.requires_duplicate_detection = True
            else:
                topic = entity if isinstance(entity, TopicConfig) else None
                if topic is None:
                    topic = TopicConfig(name=use.name)
                    namespace.topics.append(topic)
                if use.duplicate_detection and not declared:
                    topic.requires_duplicate_detection = True
                if use.subscription and not any(s.name == use.subscription for s in topic.subscriptions):
                    topic.subscriptions.append(SubscriptionConfig(name=use.subscription))

    def config(self) -> EmulatorConfig:
        extra = self._base.model_dump(exclude={"namespaces"}) if self._base else {}
        namespaces = [n.model_dump() for n in self._namespaces.values()]
        return EmulatorConfig.model_validate({**extra, "namespaces": namespaces})


def with_ports(config: EmulatorConfig, ports: Mapping[str, tuple[int, int]]) -> EmulatorConfig:
    """``config`` with each namespace's AMQP and HTTPS port from ``ports`` where it declares none (0)."""
    namespaces = []
    for namespace in config.namespaces:
        amqp, https = ports.get(namespace.name, (0, 0))
        update = {"amqp_port": namespace.amqp_port or amqp, "https_port": namespace.https_port or https}
        namespaces.append(namespace.model_copy(update=update, deep=True))
    return config.model_copy(update={"namespaces": namespaces}, deep=True)


def emulator_namespaces(uses: Iterable[EndpointUse]) -> list[str]:
    """The emulator namespaces endpoints connect to, in order, each once."""
    return list(dict.fromkeys(_namespace_of(u) for u in _emulator_uses(uses)))


def _emulator_uses(uses: Iterable[EndpointUse]) -> list[EndpointUse]:
    return [u for u in uses if u.connection.emulator is not None and u.kind is not None]


def _namespace_of(use: EndpointUse) -> str:
    assert use.connection.emulator is not None
    return use.connection.emulator.namespace


def _entities(namespace: NamespaceConfig) -> list[EventHubConfig | QueueConfig | TopicConfig]:
    return [*namespace.event_hubs, *namespace.queues, *namespace.topics]


def _find(namespace: NamespaceConfig, name: str) -> EventHubConfig | QueueConfig | TopicConfig | None:
    return next((e for e in _entities(namespace) if e.name.lower() == name.lower()), None)


def _kind_of(entity: EventHubConfig | QueueConfig | TopicConfig) -> EntityKind:
    if isinstance(entity, EventHubConfig):
        return "event hub"
    return "queue" if isinstance(entity, QueueConfig) else "topic"
