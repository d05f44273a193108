"""A ReplicationTask's `SourceReachable` condition: a probe of its source, after the pass applied its
children.

SourceReachable is informative: Ready does not depend on it. The Spark application's own state says
whether replication runs; a source that stays unreachable shows there too (the app fails and restarts),
while a blip between two probes must not flip a task's health in Argo CD. Alert on
`federator_resources{kind="ReplicationTask",condition="SourceReachable",status="False"}` instead."""

from __future__ import annotations

from federator import reasons
from federator.failover.connections import MemberConnection, resolve_connection
from federator.failover.probes import EntityRef, Prober
from federator.failover.state import ProbeOutcome
from federator.planning.errors import PlanningError
from federator.provision.errors import ManagementError
from federator.provision.secrets import SecretSource
from federator.recent import Recent
from federator.status.conditions import ConditionUpdate
from federator.validation.credential_scope import CredentialScope
from federator_contract.api.connections import connections
from federator_contract.api.replicationtask import ReplicationTaskSpec

SOURCE_REACHABLE = "SourceReachable"
SOURCE_PROBE_TIMEOUT_SECONDS = 5.0


class SourceProbes:
    """Probes of task sources, each answer shared for `ttl` seconds (the observe interval): a pass that
    probes a source probed moments ago — the same entity through the same credentials, by another pass of
    the task or by another task — gets that answer instead of opening another AMQP connection."""

    def __init__(self, prober: Prober, scope: CredentialScope, ttl: float) -> None:
        self._prober = prober
        self.scope = scope
        """Where the operator may sign in as itself to probe."""
        self._recent: Recent[tuple[str, EntityRef], ProbeOutcome] = Recent(ttl)

    async def probe(self, connection: MemberConnection, entity: EntityRef) -> ProbeOutcome:
        return await self._recent.get(
            (connection.identity, entity),
            lambda: self._prober.probe(connection, entity, SOURCE_PROBE_TIMEOUT_SECONDS),
        )


async def source_reachable(
    secrets: SecretSource, probes: SourceProbes, namespace: str, spec: ReplicationTaskSpec
) -> ConditionUpdate:
    """Probes the source of `spec` (connections already concrete: planning/following.py)."""
    source = spec.source.event_hub or spec.source.service_bus
    assert source is not None
    try:
        where = next(c.field_path for c in connections(spec) if c.role == "source")
        connection = await resolve_connection(
            secrets, namespace, source.connection, where=where, scope=probes.scope
        )
    except (PlanningError, ManagementError) as err:
        return ConditionUpdate(SOURCE_REACHABLE, "Unknown", err.reason, err.message)
    if spec.source.event_hub is not None:
        hub = spec.source.event_hub
        entity = EntityRef("eventHub", hub.event_hub_name, consumer_group=hub.consumer_group)
    else:
        bus = spec.source.service_bus
        assert bus is not None
        entity = (
            EntityRef("queue", bus.queue_name)
            if bus.queue_name is not None
            else EntityRef("subscription", bus.topic_name or "", bus.subscription_name)
        )
    outcome = await probes.probe(connection, entity)
    if outcome.healthy:
        return ConditionUpdate(SOURCE_REACHABLE, "True", reasons.SOURCE_REACHABLE, f"{entity} answers")
    return ConditionUpdate(
        SOURCE_REACHABLE, "False", reasons.SOURCE_UNREACHABLE, f"{entity}: {outcome.message}"
    )
