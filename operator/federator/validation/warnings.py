"""Semantic slips: specs the cluster admits and Federator runs, that are most likely not what was meant.

`federator validate` prints them (and fails on them with `--strict`); the operator posts them as Warning
Events, once per generation. Each names the field it is about.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from federator.validation.problems import Problem, join_path
from federator_contract.api.base import EndpointConnection, NamespaceConnection
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import (
    FAILOVER_GROUP,
    REPLICATION_APPLICATION,
    REPLICATION_TASK,
    SERVICE_BUS_MIRROR,
    Kind,
)
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import Endpoint, ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.checks.endpoints import endpoints

Path = tuple[str | int, ...]
# A start time this far ahead is not clock skew: the task would skip everything until then.
FUTURE_START_MARGIN = timedelta(hours=1)


def spec_warnings(kind: Kind, spec: Any, now: datetime | None = None) -> list[Problem]:
    """The slips in a spec; none for a spec the model refuses (its problems come first)."""
    try:
        model = kind.spec.model_validate(spec)
    except ValidationError:
        return []
    check = _CHECKS[kind.kind]
    return [Problem(join_path(("spec", *path)), message, "warning") for path, message in check(model, now)]


def _task(spec: BaseModel, now: datetime | None) -> Iterator[tuple[Path, str]]:
    assert isinstance(spec, ReplicationTaskSpec)
    source = _source_entity(spec)
    written: dict[tuple[Any, ...], Path] = {}
    for path, endpoint in endpoints(spec):
        entity = _target_entity(endpoint)
        if entity is None:
            continue
        if entity == source and entity[0] == "eventHub":
            yield path, "writes to the source event hub itself: every event written would be read again"
        elif entity == source:
            yield (
                path,
                (
                    "writes to the entity the source reads: messages written there are read again, unless a "
                    "subscription rule filters them out"
                ),
            )
        elif entity in written:
            yield path, f"writes to the same entity as {join_path(('spec', *written[entity]))}"
        written.setdefault(entity, path)
    hub = spec.source.event_hub
    if hub is not None:
        seen: dict[int, int] = {}
        for i, partition in enumerate(hub.partition_ids or []):
            if int(partition) in seen:
                other = seen[int(partition)]
                yield (
                    ("source", "eventHub", "partitionIds", i),
                    f"names the partition of partitionIds[{other}] again",
                )
            seen.setdefault(int(partition), i)
        start = hub.start_position.enqueued_time
        moment = now or datetime.now(UTC)
        if start is not None and _aware(start) > moment + FUTURE_START_MARGIN:
            yield (
                ("source", "eventHub", "startPosition", "enqueuedTime"),
                f"is in the future ({start.isoformat()}): nothing enqueued before then will be replicated",
            )


def _mirror(spec: BaseModel, now: datetime | None) -> Iterator[tuple[Path, str]]:
    assert isinstance(spec, ServiceBusMirrorSpec)
    for i, member in enumerate(spec.members):
        arm = member.management.arm if member.management else None
        if arm is not None:
            yield from _resource_group(
                arm.resource_group, ("members", i, "management", "arm", "resourceGroup")
            )
    spillover = spec.spillover
    if spillover is not None:
        queues = {entity.queue_name for entity in spillover.entities}
        if spillover.auxiliary_queue_name in queues:
            yield (
                ("spillover", "auxiliaryQueueName"),
                "is one of the spilled queues: messages that dead-letter again after a spill would land in "
                "the queue they came from",
            )


def _group(spec: BaseModel, now: datetime | None) -> Iterator[tuple[Path, str]]:
    assert isinstance(spec, FailoverGroupSpec)
    probe = spec.probe
    if probe.timeout_seconds > probe.period_seconds:
        yield (
            ("probe", "timeoutSeconds"),
            f"is longer than periodSeconds ({probe.timeout_seconds} > {probe.period_seconds}): "
            "a slow member is probed again before its last probe timed out",
        )
    if spec.publishing.dns is not None:
        path = ("publishing", "dns", "zone", "resourceGroup")
        yield from _resource_group(spec.publishing.dns.zone.resource_group, path)


def _application(spec: BaseModel, now: datetime | None) -> Iterator[tuple[Path, str]]:
    assert isinstance(spec, ReplicationApplicationSpec)
    mode = (spec.spark_conf or {}).get("spark.scheduler.mode")
    if mode is not None and mode.upper() != spec.scheduling.mode:
        yield (
            ("sparkConf", "spark.scheduler.mode"),
            f"{mode!r} contradicts scheduling.mode {spec.scheduling.mode}: set scheduling.mode instead, "
            "which also serves the members keeping up before those catching up a backlog",
        )


def _resource_group(name: str, path: Path) -> Iterator[tuple[Path, str]]:
    # The CRD's pattern is Azure's character set; Azure also refuses a name ending in a period.
    if name.endswith("."):
        yield path, f"{name!r} ends in a period, which Azure refuses in a resource group name"


def _source_entity(spec: ReplicationTaskSpec) -> tuple[Any, ...] | None:
    hub, bus = spec.source.event_hub, spec.source.service_bus
    if hub is not None:
        return ("eventHub", _where(hub.connection), hub.event_hub_name)
    if bus is not None:
        # A subscription's messages come from its topic: writing to the topic feeds the source again.
        return ("serviceBus", _where(bus.connection), bus.queue_name or bus.topic_name)
    return None  # no source at all: a CEL rule refuses it


def _target_entity(endpoint: Endpoint) -> tuple[Any, ...] | None:
    if endpoint.event_hub is not None:
        return ("eventHub", _where(endpoint.event_hub.connection), endpoint.event_hub.event_hub_name)
    if endpoint.service_bus is not None:
        bus = endpoint.service_bus
        return ("serviceBus", _where(bus.connection), bus.queue_name or bus.topic_name)
    if endpoint.postgres is not None:
        return ("postgres", endpoint.postgres.connection_secret_ref.name, endpoint.postgres.table)
    return None


def _where(connection: EndpointConnection | NamespaceConnection) -> str:
    """The namespace a connection reaches, as far as the spec tells (the same reference, the same place)."""
    return connection.model_dump_json(exclude_defaults=False)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


_CHECKS: dict[str, Callable[[BaseModel, datetime | None], Iterator[tuple[Path, str]]]] = {
    REPLICATION_TASK.kind: _task,
    SERVICE_BUS_MIRROR.kind: _mirror,
    FAILOVER_GROUP.kind: _group,
    REPLICATION_APPLICATION.kind: _application,
}
