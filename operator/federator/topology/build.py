"""Federator objects (manifests or what the cluster holds) → a Topology. Pure.

A namespace is known by how it is reached: a connection's Secret, workload-identity host or emulator
namespace; the same connection in two objects is the same namespace, so a FailoverGroup member and the
task that writes into it meet in one cluster. A connection that follows a FailoverGroup is drawn as the
group's consumers' (source) or producers' (targets) member, linked to the group. A ServiceBusMirror is
drawn from the operator's own plan: its subscriptions with their rules, and the tasks it generates."""

from __future__ import annotations

from typing import Any

from federator.planning.mirror import plan_mirror
from federator.topology.model import Topology
from federator_contract.api.failovergroup import FailoverGroupStatus
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec

Obj = dict[str, Any]


def build(objects: list[Obj]) -> Topology:
    graph = Topology()
    by_kind: dict[str, list[Obj]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    # Groups and mirrors first: they name their members, which labels the namespaces tasks then use.
    for group in by_kind.get("FailoverGroup", []):
        _group(graph, group)
    for mirror in by_kind.get("ServiceBusMirror", []):
        _mirror(graph, mirror)
    for task in by_kind.get("ReplicationTask", []):
        _task(graph, task)
    return graph


def _where(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta["name"])


def namespace_of(graph: Topology, k8s_namespace: str, connection: Obj, role: str = "source") -> str:
    """The cluster of the namespace a connection reaches."""
    if "secretRef" in connection:
        ref = connection["secretRef"]
        key = ref.get("key", "connectionString")
        suffix = "" if key == "connectionString" else f" (key {key})"
        return graph.cluster(
            f"ns:{k8s_namespace}/secret/{ref['name']}/{key}", f"Secret {ref['name']}{suffix}"
        )
    if "workloadIdentity" in connection:
        host = connection["workloadIdentity"]["fullyQualifiedNamespace"]
        return graph.cluster(f"ns:host/{host}", host)
    if "emulator" in connection:
        name = connection["emulator"]["namespace"]
        return graph.cluster(f"ns:emulator/{name}", f"emulator namespace {name}")
    group = connection["failoverGroupRef"]["name"]
    side = "consumers" if role == "source" else "producers"
    cluster = graph.cluster(
        f"ns:{k8s_namespace}/group/{group}/{side}", f"FailoverGroup {group}: {side}' member"
    )
    return cluster


def _group_node(k8s_namespace: str, name: str) -> str:
    return f"group:{k8s_namespace}/{name}"


def entity(graph: Topology, cluster: str, body: Obj) -> str:
    """The node of the entity an endpoint body names (an event hub, queue, topic, subscription, a
    dead-letter sub-queue, a table)."""
    if "eventHubName" in body:
        return graph.node(
            f"{cluster}/eventhub/{body['eventHubName']}",
            "eventhub",
            "event hub",
            body["eventHubName"],
            cluster=cluster,
        )
    if "table" in body:
        return graph.node(
            f"{cluster}/table/{body['table']}",
            "table",
            f"table ({body.get('mode', 'history')})",
            body["table"],
            cluster=cluster,
        )
    if body.get("queueName"):
        found = graph.node(
            f"{cluster}/queue/{body['queueName']}", "queue", "queue", body["queueName"], cluster=cluster
        )
    else:
        topic = graph.node(
            f"{cluster}/topic/{body['topicName']}", "topic", "topic", body["topicName"], cluster=cluster
        )
        if not body.get("subscriptionName"):
            return topic
        found = graph.node(
            f"{topic}/subscription/{body['subscriptionName']}",
            "subscription",
            "subscription",
            body["subscriptionName"],
            cluster=cluster,
        )
        graph.edge(topic, found, "subscription", "dotted")
    if body.get("subQueue") == "deadLetter":
        dead = graph.node(
            f"{found}/deadletter", "queue", "dead-letter queue of", found.rsplit("/", 1)[1], cluster=cluster
        )
        graph.edge(found, dead, "dead letters", "dotted")
        return dead
    return found


def _endpoint(graph: Topology, k8s_namespace: str, endpoint: Obj, role: str) -> str | None:
    for key in ("eventHub", "serviceBus"):
        body = endpoint.get(key)
        if isinstance(body, dict):
            connection = body.get("connection") or {}
            cluster = namespace_of(graph, k8s_namespace, connection, role)
            node = entity(graph, cluster, body)
            if "failoverGroupRef" in connection:
                group = _group_node(k8s_namespace, connection["failoverGroupRef"]["name"])
                graph.node(group, "group", "FailoverGroup", connection["failoverGroupRef"]["name"])
                graph.edge(group, node, "resolves", "dotted")
            return node
    body = endpoint.get("postgres")
    if isinstance(body, dict):
        ref = body["connectionSecretRef"]
        cluster = graph.cluster(
            f"pg:{k8s_namespace}/{ref['name']}/{ref.get('key', 'connectionString')}",
            f"PostgreSQL (Secret {ref['name']})",
        )
        return entity(graph, cluster, body)
    return None


def _task(graph: Topology, task: Obj, owner: str = "") -> None:
    ns, name = _where(task)
    spec = task.get("spec") or {}
    editors = [next(iter(e), "?") for e in spec.get("editors") or [] if isinstance(e, dict)]
    label = ["ReplicationTask", name]
    if editors:
        label.append("editors: " + " → ".join(editors))
    if owner:
        label.append(f"generated by ServiceBusMirror {owner}")
    node = graph.node(f"task:{ns}/{name}", "task", *label)
    source = _endpoint(graph, ns, spec.get("source") or {}, "source")
    if source is not None:
        group = (spec.get("source") or {}).get("eventHub", {}).get("consumerGroup")
        graph.edge(source, node, f"reads ({group})" if group else "reads")
    for target in spec.get("targets") or []:
        found = _endpoint(graph, ns, target, "targets")
        if found is not None:
            condition = f" if {target['condition']}" if target.get("condition") else ""
            graph.edge(node, found, f"{target.get('name')}{condition}")
    for role, label_text in (("unrouted", "unrouted"), ("deadLetter", "dead letters")):
        if spec.get(role):
            found = _endpoint(graph, ns, spec[role], "targets")
            if found is not None:
                graph.edge(node, found, label_text, "dashed")


def _group(graph: Topology, group: Obj) -> None:
    ns, name = _where(group)
    spec = group.get("spec") or {}
    primary = spec.get("primaryMember")
    producers = FailoverGroupStatus.model_validate(group.get("status") or {}).producer_member
    where = f" · producers on {producers}" if producers else ""
    node = graph.node(
        _group_node(ns, name),
        "group",
        "FailoverGroup",
        name,
        f"{spec.get('mode', 'manual')} · primary {primary}{where}",
    )
    failback = spec.get("failback") or {}
    probe_entity = (spec.get("probe") or {}).get("entity") or next(
        iter(failback.get("drainEntities") or []), None
    )
    for member in spec.get("members") or []:
        cluster = namespace_of(graph, ns, member.get("connection") or {})
        graph.cluster(cluster, f"member {member['name']} of {name} · {member.get('endpoint', '')}")
        role = "probe (primary)" if member["name"] == primary else "probe"
        if probe_entity:
            graph.edge(node, entity(graph, cluster, probe_entity), role, "dotted")
        for drained in failback.get("drainEntities") or []:
            if drained != probe_entity:
                graph.edge(node, entity(graph, cluster, drained), "drain check", "dotted")


def _mirror(graph: Topology, mirror: Obj) -> None:
    ns, name = _where(mirror)
    spec = ServiceBusMirrorSpec.model_validate(mirror.get("spec") or {})
    clusters = {}
    for member in spec.members:
        connection = member.connection.model_dump(by_alias=True, exclude_none=True, mode="json")
        clusters[member.name] = namespace_of(graph, ns, connection)
        graph.cluster(
            clusters[member.name], f"member {member.name} of ServiceBusMirror {name} ({spec.pattern})"
        )
    plan = plan_mirror(name=name, namespace=ns, spec=spec)
    for sub in plan.subscriptions:
        cluster = clusters[sub.member]
        topic = entity(graph, cluster, {"topicName": sub.topic})
        rules = [
            f"rule {r.name}: {r.sql_filter}" + (f" → {r.sql_action}" if r.sql_action else "")
            for r in sub.rules
        ]
        found = graph.node(
            f"{topic}/subscription/{sub.name}",
            "subscription",
            "subscription",
            sub.name,
            *rules,
            cluster=cluster,
        )
        graph.edge(topic, found, "subscription", "dotted")
    for queue in plan.queues:
        entity(graph, clusters[queue.member], {"queueName": queue.name})
    for task in plan.tasks:
        _task(graph, task, owner=name)
