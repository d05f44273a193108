"""The probing part of a FailoverGroup round, without Kubernetes: probe every member at once, check the
drain of the consumers' member while failing back, and step the state machine. What is published, and
where (a ConfigMap and DNS in a cluster, a file in local mode), is the caller's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime

from federator.failover.connections import MemberConnection
from federator.failover.probes import EntityRef, Prober, describe
from federator.failover.replication import Replication
from federator.failover.state import Drain, GroupState, Step, step
from federator_contract.api.failovergroup import DrainHold, FailoverGroupSpec


async def probe_and_step(
    prober: Prober,
    spec: FailoverGroupSpec,
    state: GroupState,
    connections: Mapping[str, MemberConnection],
    now: datetime,
    replication: Replication | None = None,
    followers: tuple[DrainHold, ...] | None = None,
) -> Step:
    """One round: every member's probe and the drain check run concurrently, then the machine steps
    (`replication`: what the tasks copying between the members have left, for planned switches;
    `followers`: what keeps the tasks following the group from having drained the consumers' member,
    draining.py)."""
    timeout = spec.probe.timeout_seconds
    entity = probe_entity(spec)
    probes = asyncio.gather(*(prober.probe(connections[m.name], entity, timeout) for m in spec.members))
    checked = drain_check(prober, spec, state, connections, followers)
    outcomes, drain = await asyncio.gather(probes, checked)
    results = dict(zip([m.name for m in spec.members], outcomes, strict=True))
    return step(spec, state, results, drain, now, replication)


def probe_entity(spec: FailoverGroupSpec) -> EntityRef:
    """The probe's entity: `probe.entity`, else the first drain entity (a CEL rule requires one of them)."""
    entity = spec.probe.entity or spec.failback.drain_entities[0]
    return EntityRef.of(entity)


async def drain_check(
    prober: Prober,
    spec: FailoverGroupSpec,
    state: GroupState,
    connections: Mapping[str, MemberConnection],
    followers: tuple[DrainHold, ...] | None = None,
) -> Drain | None:
    """While failing back: what the consumers' member still holds, in its drain entities and for the
    tasks following the group (`followers`; None: none follows from an event hub); None when there is
    nothing to check (the drain timeout moves the consumers)."""
    if state.phase != "FailingBack":
        return None
    entities = await _entities_drain(prober, spec, state, connections)
    if followers is None:
        return entities
    if entities is None:
        return Drain(followers)
    return Drain((*entities.pending, *followers), entities.error)


async def _entities_drain(
    prober: Prober, spec: FailoverGroupSpec, state: GroupState, connections: Mapping[str, MemberConnection]
) -> Drain | None:
    """The drain entities still holding messages on the consumers' member (None: none to check)."""
    consumer = state.consumer
    if not spec.failback.drain_entities or consumer not in connections:
        return None
    assert consumer is not None
    entities = [EntityRef.of(e) for e in spec.failback.drain_entities]
    try:
        pending = await prober.holding(connections[consumer], entities, spec.probe.timeout_seconds)
    except Exception as err:  # an unreachable member is not drained; the timeout still applies
        return Drain(error=describe(err))
    return Drain(tuple(DrainHold(entity=entity) for entity in pending))
