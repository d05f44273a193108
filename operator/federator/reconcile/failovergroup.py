"""One round of a FailoverGroup, the same in a cluster and in local mode: probe every member, check the
drain while failing back, step the state machine, publish the endpoints and the DNS records, and say what
changed. What differs between the two is given as ports (`GroupPorts`): where Secrets are read, which
emulator namespaces exist, where the endpoints are published and who writes DNS records. The cluster's
adapters are here (`reconcile`: the endpoints ConfigMap, Azure DNS); local mode's are in local/groups.py.
The handler runs a round every `spec.probe.periodSeconds` and writes the result."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError

from federator import reasons
from federator.apply.children import Outcome, ensure
from federator.failover.conditions import assess
from federator.failover.confirmation import Confirmed, confirm
from federator.failover.connections import resolve_connection
from federator.failover.dns import DnsPublisher
from federator.failover.draining import followers_pending
from federator.failover.probes import Prober
from federator.failover.publishing import config_map_name, dns_record_sets, endpoints_config_map
from federator.failover.replication import replication_to_members
from federator.failover.rounds import probe_and_step
from federator.failover.runtime import FailoverRuntime
from federator.failover.state import GroupState, Switch
from federator.failover.timings import followers, measure
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.kube.resources import CONFIGMAPS, REPLICATION_TASKS
from federator.planning.errors import PlanningError
from federator.planning.task import Owner
from federator.provision.errors import ManagementError
from federator.provision.secrets import SecretSource
from federator.provision.serviceaccount import NamespaceCredentials
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result, written
from federator.validation.credential_scope import CredentialScope
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.base import API_VERSION
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import FAILOVER_GROUP

TASKS = REPLICATION_TASKS  # their lag: what a switch would leave behind


class EndpointsPublisher(Protocol):
    """Where a group's endpoints are published (the keys of `endpoints_config_map`)."""

    @property
    def description(self) -> str:
        """What is published, in words (`endpoints ConfigMap`)."""
        ...

    async def publish(self, config_map: dict[str, Any]) -> str | None:
        """Publish; returns what was put back when a published copy had been changed (None otherwise)."""
        ...


@dataclass(frozen=True)
class GroupPorts:
    """What a group round reads and writes through, where a cluster and local mode differ."""

    secrets: SecretSource
    """Where the members' Secrets are read: the API, or in local mode the environment and the manifests'
    Secret documents."""
    prober: Prober
    endpoints: EndpointsPublisher
    dns: DnsPublisher | None
    """Who writes the group's DNS records; None when they are not written (local mode, for a zone the
    emulator does not serve: it never writes to Azure DNS)."""
    scope: CredentialScope
    """Where the operator may sign in as itself, and which hosts its tokens may go to; local mode's
    refuses nothing."""
    emulators: Mapping[str, str] = field(default_factory=dict)
    """Local mode: emulator namespace → AMQP connection string. Empty in a cluster, where emulator members
    are refused (EmulatorOnlyInLocalMode)."""
    tasks: Callable[[str], Awaitable[list[dict[str, Any]]]] | None = None
    """The ReplicationTask objects of a namespace, whose lag (`status.lag`) decides when a planned switch
    may go and what a forced one leaves behind, and whose source member and batch time say when a
    follower flows after a switch. Local mode reads its tasks' status files (local/taskobjects.py)."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    """When a switch was decided and its endpoints published (the round's `now` is when it began)."""


@dataclass
class GroupRound:
    findings: Findings
    switches: list[Switch]
    state: GroupState | None
    """The state after the round; None when it stopped before probing (a connection could not be had)."""
    dns_error: ManagementError | None = None
    """Why the DNS records were not written, when they were not."""
    phases: list[tuple[str, float]] = field(default_factory=list)
    """Phase timings of switches measured this round (failover/timings.py), for the histogram."""


async def group_round(
    ports: GroupPorts,
    *,
    name: str,
    namespace: str,
    uid: str | None,
    spec: FailoverGroupSpec,
    state: GroupState,
    now: datetime,
) -> GroupRound:
    """One round from `state` (what the previous round left: status in a cluster, the state dir in local
    mode)."""
    began = ports.clock()
    try:
        connections = {
            m.name: await resolve_connection(
                ports.secrets, namespace, m.connection, ports.emulators, f"member {m.name}", scope=ports.scope
            )
            for m in spec.members
        }
    except (PlanningError, ManagementError) as err:
        stalled = Findings(cond.stalled(err.reason, err.message), retry_after=spec.probe.period_seconds)
        return GroupRound(stalled, [], None)
    tasks = await ports.tasks(namespace) if ports.tasks is not None else None
    replication = replication_to_members(spec, state.producer, tasks) if tasks is not None else None
    copying = replication  # from the producers' member before the round: what a switch leaves behind
    following = None  # while failing back: the following tasks' drain of the consumers' member
    if tasks is not None and state.phase == "FailingBack":
        following = followers_pending(name, state.consumer, state.producer_since, tasks)
    stepped = await probe_and_step(ports.prober, spec, state, connections, now, replication, following)
    decided = ports.clock()
    if tasks is not None:  # the producers may have moved
        replication = replication_to_members(spec, stepped.state.producer, tasks)
    notes = list(stepped.notes)
    owner = Owner(API_VERSION, FAILOVER_GROUP.kind, name, uid) if uid else None
    try:
        restored = await ports.endpoints.publish(
            endpoints_config_map(name, namespace, spec, stepped.state, owner)
        )
    except PlanningError as err:  # nothing published: the switch is not made either (decided again later)
        stalled = Findings(cond.stalled(err.reason, err.message), retry_after=spec.probe.period_seconds)
        return GroupRound(stalled, [], None)
    if restored is not None and not stepped.switches:
        notes.append(Note("Warning", reasons.DRIFT_CORRECTED, f"{restored} was changed; restored"))
    assessed = assess(spec, stepped.state, replication)
    updates, dns_error = assessed.updates, await _publish_dns(ports, namespace, name, spec, stepped.state)
    retry_after = None  # set when the round ends blocked (counted in federator_reconcile_errors_total)
    if dns_error is not None:
        triad = cond.reconciling if dns_error.retryable else cond.stalled
        message = f"{ports.endpoints.description} published; DNS not: {dns_error.message}"
        updates = [*triad(dns_error.reason, message), *assessed.own]
        retry_after = float(spec.probe.period_seconds)
    timed = measure(
        state.switches,
        stepped.switches,
        decided=decided,
        published=ports.clock() if dns_error is None else None,
        loss=stepped.state.last_loss,
        tasks=followers(name, tasks) if tasks is not None else None,
        began=(now, began),
        copying=copying,
    )
    confirmed = confirm(timed.records, tasks) if tasks is not None else Confirmed(timed.records, [])
    after = dataclasses.replace(stepped.state, switches=confirmed.records)
    status = after.to_status()
    if replication is not None:
        status = status.model_copy(update={"replication": [r.to_status() for r in replication.values()]})
    found = Findings(updates, written(status), [*notes, *timed.notes, *confirmed.notes], retry_after)
    return GroupRound(found, stepped.switches, after, dns_error, timed.observed)


async def _publish_dns(
    ports: GroupPorts, namespace: str, name: str, spec: FailoverGroupSpec, state: GroupState
) -> ManagementError | None:
    """Write the group's DNS records, when it has them and they are written here; why not, if they were
    not."""
    dns = spec.publishing.dns
    if dns is None or ports.dns is None:
        return None
    try:
        await ports.dns.publish(ports.secrets, namespace, name, dns.zone, dns_record_sets(spec, state))
    except ManagementError as err:
        return err
    return None


@dataclass
class GroupResult:
    result: Result
    switches: list[Switch]
    phases: list[tuple[str, float]] = field(default_factory=list)


async def reconcile(
    reads: ClusterReads, runtime: FailoverRuntime, body: dict[str, Any], now: datetime | None = None
) -> GroupResult:
    """One round in a cluster for the group in `body` (its current status included)."""
    meta, spec_raw = body["metadata"], body.get("spec") or {}
    problems = semantic_problems(FAILOVER_GROUP, spec_raw)
    switches: list[Switch] = []
    phases: list[tuple[str, float]] = []
    if problems:
        message = "; ".join(str(p) for p in problems)
        found = Findings(cond.stalled(reasons.INVALID_SPEC, message), retry_after=_period(spec_raw))
    else:
        ports = GroupPorts(
            NamespaceCredentials(reads.secrets, reads.client),  # a DNS zone's serviceAccount: TokenRequest
            runtime.prober,
            ConfigMapEndpoints(reads),
            runtime.dns,
            runtime.scope,
            tasks=_namespace_tasks(reads.client),
        )
        done = await group_round(
            ports,
            name=meta["name"],
            namespace=meta["namespace"],
            uid=meta.get("uid"),
            spec=FailoverGroupSpec.model_validate(spec_raw),
            state=GroupState.of(body),
            now=now or datetime.now(UTC),  # to the microsecond: a failure is detected when it is
        )
        found, switches, phases = done.findings, done.switches, done.phases
    result = status_result(body, found, spec_warnings(FAILOVER_GROUP, spec_raw))
    return GroupResult(result, switches, phases)


def _namespace_tasks(client: KubeClient) -> Callable[[str], Awaitable[list[dict[str, Any]]]]:
    async def tasks(namespace: str) -> list[dict[str, Any]]:
        return list(((await client.get(TASKS.path(namespace))) or {}).get("items", []))

    return tasks


@dataclass(frozen=True)
class ConfigMapEndpoints:
    """The endpoints ConfigMap, owned by the group."""

    reads: ClusterReads

    @property
    def description(self) -> str:
        return "endpoints ConfigMap"

    async def publish(self, config_map: dict[str, Any]) -> str | None:
        """Raises PlanningError when a ConfigMap of that name exists that the group does not own."""
        meta = config_map["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        stored = await self.reads.children.get(CONFIGMAPS, namespace, name)
        if stored is None:  # the watched copy holds Federator's children only: one someone else made?
            stored = await self.reads.client.get(CONFIGMAPS.path(namespace, name))
        mine = owner_uids(config_map)  # none in local mode, which has no ConfigMaps
        if stored is not None and mine and not mine & owner_uids(stored):
            raise PlanningError(
                reasons.CONFIG_MAP_NOT_OWNED,
                f"spec.publishing.configMapName names ConfigMap {name}, which exists and is not this "
                "FailoverGroup's (no owner reference to it): Federator writes onto and deletes only the "
                "ConfigMap it created. Name another one, or delete that ConfigMap if it may go",
            )
        outcome, written = await ensure(self.reads.client, CONFIGMAPS, config_map, stored)
        self.reads.children.remember(CONFIGMAPS, written)
        return f"ConfigMap {meta['name']}" if outcome is Outcome.RESTORED else None


def owner_uids(obj: dict[str, Any]) -> set[str]:
    return {str(r.get("uid")) for r in (obj.get("metadata") or {}).get("ownerReferences") or []}


def _period(spec_raw: dict[str, Any]) -> float:
    return float((spec_raw.get("probe") or {}).get("periodSeconds", 10))


async def delete_children(
    client: KubeClient, runtime: FailoverRuntime, body: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """Delete the endpoints ConfigMap and the group's DNS records: (what was deleted, what could not be).
    A DNS failure does not hold the deletion: a finalizer stuck on a lost credential helps nobody."""
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    try:
        spec = FailoverGroupSpec.model_validate(body.get("spec") or {})
    except ValidationError:
        spec = None
    deleted, failed = [], []
    cm = config_map_name(name, spec) if spec is not None else f"{name}-endpoints"
    stored = await client.get(CONFIGMAPS.path(namespace, cm))
    ours = stored is not None and meta.get("uid") in owner_uids(stored)  # never one it did not create
    if ours and await client.delete(CONFIGMAPS.path(namespace, cm)):
        deleted.append(f"ConfigMap {cm}")
    if spec is not None and spec.publishing.dns is not None:
        zone = spec.publishing.dns.zone
        records = dns_record_sets(spec, GroupState.of(body))
        try:
            await runtime.dns.remove(client, namespace, name, zone, records)
            deleted.append(f"{len(records)} DNS record sets in zone {zone.zone_name}")
        except ManagementError as err:
            failed.append(f"DNS record sets in zone {zone.zone_name} ({err.message}); delete them by hand")
    return deleted, failed
