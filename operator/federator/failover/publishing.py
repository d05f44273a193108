"""Where clients look up the active members: the endpoints ConfigMap and, optionally, DNS records. Only
host names, member names and Secret *names* are published, never a connection string.

DNS follows Microsoft's Event Hubs replication guidance: each member gets SRV records
`_azure_servicebus._amqp.<member>` in the zone (port 5671 for AMQP, 443 for AMQP over WebSockets, both
targeting the member's endpoint), and the producer and consumer records are CNAMEs to `<member>.<zone>`
(Azure's endpoints cannot be CNAME-aliased directly: their TLS certificates name only themselves). A
client resolves the CNAME, then the SRV record under the name it points to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from federator.failover.state import GroupState
from federator.planning.task import MANAGED_BY, Owner
from federator.status.conditions import timestamp
from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverMember

SRV_PREFIX = "_azure_servicebus._amqp"
# (priority, weight, port): AMQP over TLS preferred, AMQP over WebSockets as the fallback.
SRV_PORTS = ((1, 1, 5671), (2, 2, 443))


def config_map_name(name: str, spec: FailoverGroupSpec) -> str:
    return spec.publishing.config_map_name or f"{name}-endpoints"


def endpoints_config_map(
    name: str,
    namespace: str,
    spec: FailoverGroupSpec,
    state: GroupState,
    owner: Owner | None,
    since: Callable[[datetime | None], str] = timestamp,
) -> dict[str, Any]:
    """Keys per role (`producer…`, `consumer…`): member, endpoint, since when (`since` writes the time),
    and the Secret reference of the member's connection when it has one (`<secret>/<key>`; apps mount
    those Secrets themselves)."""
    members = {m.name: m for m in spec.members}
    data = {"phase": state.phase or "", "primaryMember": spec.primary_member}
    for role, member in (("producer", state.producer), ("consumer", state.consumer)):
        found = members.get(member or "")
        if found is None:
            continue
        data[f"{role}Member"] = found.name
        data[f"{role}Endpoint"] = found.endpoint
        data[f"{role}Since"] = since(state.producer_since if role == "producer" else state.consumer_since)
        if (ref := found.connection.secret_ref) is not None:
            data[f"{role}SecretRef"] = f"{ref.name}/{ref.key}"
    metadata: dict[str, Any] = {
        "name": config_map_name(name, spec),
        "namespace": namespace,
        "labels": {
            "app.kubernetes.io/name": "federator-endpoints",
            "app.kubernetes.io/instance": name,
            "app.kubernetes.io/managed-by": MANAGED_BY,
            "federator.io/failover-group": name,
        },
    }
    if owner is not None:
        metadata["ownerReferences"] = [owner.reference()]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


@dataclass(frozen=True)
class RecordSet:
    """One DNS record set as desired: a CNAME target, or SRV (priority, weight, port, target) entries."""

    name: str
    type: Literal["CNAME", "SRV"]
    ttl: int
    cname: str | None = None
    srv: tuple[tuple[int, int, int, str], ...] = ()


def dns_record_sets(spec: FailoverGroupSpec, state: GroupState) -> list[RecordSet]:
    """Every record set the group owns in its zone; empty without DNS publishing."""
    dns = spec.publishing.dns
    if dns is None:
        return []
    zone, ttl = dns.zone.zone_name, dns.ttl_seconds
    found = [
        RecordSet(srv_name(m), "SRV", ttl, srv=tuple((p, w, port, _host(m)) for p, w, port in SRV_PORTS))
        for m in spec.members
    ]
    for record, member in (
        (dns.producer_record_name, state.producer),
        (dns.consumer_record_name, state.consumer),
    ):
        if member is not None:
            found.append(RecordSet(record, "CNAME", ttl, cname=f"{member}.{zone}"))
    return found


def srv_name(member: FailoverMember) -> str:
    return f"{SRV_PREFIX}.{member.name}"


def _host(member: FailoverMember) -> str:
    # SRV records carry their own port; an endpoint's `:port` (local emulators) is not part of the host.
    return member.endpoint.rsplit(":", 1)[0] if ":" in member.endpoint else member.endpoint
