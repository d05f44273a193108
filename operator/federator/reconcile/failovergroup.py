"""One round of a FailoverGroup: probe every member, check the drain while failing back, step the state
machine, publish the endpoints (ConfigMap, DNS), and say what changed. The handler runs it every
`spec.probe.periodSeconds` and writes the result."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from federator import reasons
from federator.apply.children import Outcome, ensure
from federator.failover.conditions import assess
from federator.failover.connections import resolve_connection
from federator.failover.publishing import config_map_name, dns_record_sets, endpoints_config_map
from federator.failover.replication import replication_to_members
from federator.failover.rounds import probe_and_step
from federator.failover.runtime import FailoverRuntime
from federator.failover.state import GroupState, Switch
from federator.kube.client import CONFIGMAPS, KubeClient, ResourceRef
from federator.planning.errors import PlanningError
from federator.planning.task import Owner
from federator.provision.errors import ManagementError
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings, Result, status_result
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.base import API_VERSION
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import FAILOVER_GROUP

TASKS = ResourceRef(API_VERSION, "replicationtasks")  # their lag: what a switch would leave behind


@dataclass
class GroupResult:
    result: Result
    switches: list[Switch]


async def reconcile(
    client: KubeClient, runtime: FailoverRuntime, body: dict[str, Any], now: datetime | None = None
) -> GroupResult:
    """One round for the group in `body` (its current status included)."""
    findings, switches = await _round(client, runtime, body, now or datetime.now(UTC).replace(microsecond=0))
    return GroupResult(
        status_result(body, findings, spec_warnings(FAILOVER_GROUP, body.get("spec"))), switches
    )


async def _round(
    client: KubeClient, runtime: FailoverRuntime, body: dict[str, Any], now: datetime
) -> tuple[Findings, list[Switch]]:
    meta, spec_raw = body["metadata"], body.get("spec") or {}
    namespace, name = meta["namespace"], meta["name"]
    problems = semantic_problems(FAILOVER_GROUP, spec_raw)
    if problems:
        message = "; ".join(str(p) for p in problems)
        return Findings(cond.stalled(reasons.INVALID_SPEC, message), retry_after=_period(spec_raw)), []
    spec = FailoverGroupSpec.model_validate(spec_raw)
    try:
        connections = {
            m.name: await resolve_connection(
                client, namespace, m.connection, runtime.emulators, f"member {m.name}"
            )
            for m in spec.members
        }
    except (PlanningError, ManagementError) as err:
        return Findings(cond.stalled(err.reason, err.message), retry_after=spec.probe.period_seconds), []
    state = GroupState.from_status(body.get("status"))
    tasks = ((await client.get(TASKS.path(namespace))) or {}).get("items", [])
    replication = replication_to_members(spec, state.producer, tasks)
    stepped = await probe_and_step(runtime.prober, spec, state, connections, now, replication)
    replication = replication_to_members(spec, stepped.state.producer, tasks)  # the producers may have moved
    notes = list(stepped.notes)
    owner = Owner(API_VERSION, FAILOVER_GROUP.kind, name, meta["uid"]) if meta.get("uid") else None
    config_map = endpoints_config_map(name, namespace, spec, stepped.state, owner)
    outcome, _ = await ensure(client, CONFIGMAPS, config_map)
    if outcome is Outcome.RESTORED and not stepped.switches:
        cm = config_map_name(name, spec)
        notes.append(Note("Warning", "DriftCorrected", f"ConfigMap {cm} was changed; restored"))
    updates = assess(spec, stepped.state, replication)
    retry_after = None  # set when the round ends blocked (counted in federator_reconcile_errors_total)
    if spec.publishing.dns is not None:
        try:
            await runtime.dns.publish(
                client, namespace, name, spec.publishing.dns.zone, dns_record_sets(spec, stepped.state)
            )
        except ManagementError as err:
            triad = cond.reconciling if err.retryable else cond.stalled
            message = f"endpoints ConfigMap published; DNS not: {err.message}"
            updates = [*triad(err.reason, message), *updates[3:]]
            retry_after = float(spec.probe.period_seconds)
    fields = {**stepped.state.status_fields(), "replication": [r.to_status() for r in replication.values()]}
    return Findings(updates, fields, notes, retry_after), stepped.switches


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
    if await client.delete(CONFIGMAPS.path(namespace, cm)):
        deleted.append(f"ConfigMap {cm}")
    if spec is not None and spec.publishing.dns is not None:
        zone = spec.publishing.dns.zone
        records = dns_record_sets(spec, GroupState.from_status(body.get("status")))
        try:
            await runtime.dns.remove(client, namespace, name, zone, records)
            deleted.append(f"{len(records)} DNS record sets in zone {zone.zone_name}")
        except ManagementError as err:
            failed.append(f"DNS record sets in zone {zone.zone_name} ({err.message}); delete them by hand")
    return deleted, failed
