"""What a ReplicationTask's reconciliation needs from failover: the FailoverGroups it follows, read from the
API, and the `SourceReachable` condition from a probe of its source.

SourceReachable is informative: Ready does not depend on it. The Spark application's own state says
whether replication runs; a source that stays unreachable shows there too (the app fails and restarts),
while a blip between two probes must not flip a task's health in Argo CD. Alert on
`federator_resources{kind="ReplicationTask",condition="SourceReachable",status="False"}` instead."""

from __future__ import annotations

from typing import Any

from federator import reasons
from federator.failover.connections import resolve_connection
from federator.failover.probes import EntityRef
from federator.failover.runtime import FailoverRuntime
from federator.kube.client import CONFIGMAPS, KubeClient, ResourceRef
from federator.planning.errors import PlanningError
from federator.planning.following import Following, followed_groups
from federator.planning.task import TASK_CONFIG_KEY, TaskPlan
from federator.provision.errors import ManagementError
from federator.status.conditions import ConditionUpdate
from federator.status.events import Note
from federator_contract.api.base import GROUP, VERSION
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskConfigError

FAILOVER_GROUPS = ResourceRef(f"{GROUP}/{VERSION}", "failovergroups")
SOURCE_REACHABLE = "SourceReachable"
SOURCE_PROBE_TIMEOUT_SECONDS = 5.0


async def read_followed_groups(
    client: KubeClient, namespace: str, spec: ReplicationTaskSpec
) -> dict[str, dict[str, Any] | None]:
    """Each FailoverGroup the task follows, as stored (None when it does not exist)."""
    return {name: await client.get(FAILOVER_GROUPS.path(namespace, name)) for name in followed_groups(spec)}


async def source_reachable(
    client: KubeClient, runtime: FailoverRuntime, namespace: str, spec: ReplicationTaskSpec
) -> ConditionUpdate:
    """Probes the source of `spec` (connections already concrete: planning/following.py)."""
    source = spec.source.event_hub or spec.source.service_bus
    assert source is not None
    try:
        connection = await resolve_connection(
            client, namespace, source.connection, where="spec.source connection"
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
    outcome = await runtime.prober.probe(connection, entity, SOURCE_PROBE_TIMEOUT_SECONDS)
    if outcome.healthy:
        return ConditionUpdate(SOURCE_REACHABLE, "True", reasons.SOURCE_REACHABLE, f"{entity} answers")
    return ConditionUpdate(
        SOURCE_REACHABLE, "False", reasons.SOURCE_UNREACHABLE, f"{entity}: {outcome.message}"
    )


async def member_switch(client: KubeClient, plan: TaskPlan, following: Following) -> Note | None:
    """An Event when a followed group switched since the task's config was last written (the config then
    changes and the Spark application restarts on the new member)."""
    if not following.members:
        return None
    meta = plan.config_map["metadata"]
    stored = await client.get(CONFIGMAPS.path(meta["namespace"], meta["name"]))
    text = ((stored or {}).get("data") or {}).get(TASK_CONFIG_KEY)
    try:
        before = TaskConfig.from_json(text).followed_members if text else {}
    except TaskConfigError:  # edited by hand: drift, which the pass restores
        return None
    if not before or before == following.members:
        return None
    changes = [
        f"{path} uses {member} (was {before.get(path, 'nothing')})"
        for path, member in sorted(following.members.items())
        if before.get(path) != member
    ]
    return Note(
        "Normal", "FollowedMemberSwitched", "; ".join(changes) + ": task re-planned, the app restarts"
    )
