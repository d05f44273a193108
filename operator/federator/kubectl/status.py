"""`kubectl federator status`: one tree per FailoverGroup (members and probes → tasks following it → Spark
→ lag) and per ServiceBusMirror (members, entities and rules → pairs → tasks), then the other tasks.
Built once as plain data (what `-o json|yaml` prints), then drawn as a rich tree; worst first."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from federator.kubectl import output
from federator.kubectl.cluster import TASK_LABEL, Snapshot
from federator.kubectl.model import (
    ERROR,
    NOTE,
    OK,
    SEVERITY_NAMES,
    WARNING,
    ConditionView,
    Obj,
    ago,
    conditions,
    following_groups,
    headline,
    lag_of,
    meta,
    severity,
    spec_of,
    stale_batch,
    stale_probe,
    status_of,
    worst_first,
)
from federator.planning.mirror import plan_mirror
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec

MIRROR_LABEL = "federator.io/servicebusmirror"


def build(snapshot: Snapshot) -> dict[str, Any]:
    """The status of everything in the snapshot, as plain data."""
    pods = _pods_by_task(snapshot.spark_pods)
    shown: set[tuple[str, str]] = set()
    groups = []
    for group in worst_first(snapshot.groups):
        ns, name = meta(group)
        following = [t for t in snapshot.tasks if meta(t)[0] == ns and name in following_groups(t)]
        shown.update(meta(t) for t in following)
        groups.append(
            _group(group, [_task(t, pods, following_groups(t)[name]) for t in worst_first(following)])
        )
    mirrors = []
    for mirror in worst_first(snapshot.mirrors):
        ns, name = meta(mirror)
        owned = {
            meta(t)[1]: t
            for t in snapshot.tasks
            if meta(t)[0] == ns and ((t.get("metadata") or {}).get("labels") or {}).get(MIRROR_LABEL) == name
        }
        shown.update((ns, n) for n in owned)
        mirrors.append(_mirror(mirror, owned, pods))
    others = [t for t in worst_first(snapshot.tasks) if meta(t) not in shown]
    return {
        "failoverGroups": groups,
        "serviceBusMirrors": mirrors,
        "replicationTasks": [_task(t, pods, None) for t in others],
    }


def _resource(obj: Obj) -> dict[str, Any]:
    ns, name = meta(obj)
    state, reason, message = headline(obj)
    return {
        "kind": obj.get("kind", ""),
        "namespace": ns,
        "name": name,
        "state": state,
        "reason": reason,
        "message": message,
        "severity": SEVERITY_NAMES[severity(obj)],
        "observedGeneration": status_of(obj).get("observedGeneration"),
        "generation": (obj.get("metadata") or {}).get("generation"),
        "conditions": [c.to_dict() for c in conditions(obj)],
    }


def _group(group: Obj, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    spec, status = spec_of(group), status_of(group)
    probes = {p.get("member"): p for p in status.get("probes") or [] if isinstance(p, dict)}
    members = []
    for member in spec.get("members") or []:
        name = member.get("name")
        roles = [
            r
            for r, who in (
                ("producers", status.get("producerMember")),
                ("consumers", status.get("consumerMember")),
            )
            if who == name
        ]
        members.append(
            {
                "name": name,
                "endpoint": member.get("endpoint"),
                "primary": name == spec.get("primaryMember"),
                "roles": roles,
                "probe": probes.get(name),
            }
        )
    failing = [m["name"] for m in members if m["probe"] is not None and not m["probe"].get("healthy")]
    resource = _resource(group)
    if failing and _LEVEL[resource["severity"]] < WARNING:
        resource["severity"] = SEVERITY_NAMES[WARNING]  # it works, but a member is down: worth a look
    return {
        **resource,
        "failingMembers": failing,
        "probePeriodSeconds": int((spec.get("probe") or {}).get("periodSeconds", 10)),
        "mode": spec.get("mode", "manual"),
        "phase": status.get("phase"),
        "primaryMember": spec.get("primaryMember"),
        "activeMember": spec.get("activeMember"),
        "producerMember": status.get("producerMember"),
        "consumerMember": status.get("consumerMember"),
        "producerSince": status.get("producerSince"),
        "consumerSince": status.get("consumerSince"),
        "drainPending": status.get("drainPending") or [],
        "endpointsConfigMap": (spec.get("publishing") or {}).get("configMapName")
        or f"{meta(group)[1]}-endpoints",
        "members": members,
        "tasks": tasks,
    }


def _mirror(mirror: Obj, owned: dict[str, Obj], pods: dict[tuple[str, str], list[Obj]]) -> dict[str, Any]:
    spec, status = spec_of(mirror), status_of(mirror)
    rules = _planned_rules(mirror)
    members = [
        {
            "name": m.get("name"),
            "state": m.get("state"),
            "reason": m.get("reason", ""),
            "message": m.get("message", ""),
            "entities": [
                {"path": e, "rules": rules.get((m.get("name"), e), [])} for e in m.get("entities") or []
            ],
        }
        for m in status.get("members") or []
    ]
    pairs = []
    for pair in status.get("pairs") or []:
        task = owned.get(pair.get("taskName", ""))
        pairs.append({**pair, "task": _task(task, pods, None) if task is not None else None})
    return {**_resource(mirror), "pattern": spec.get("pattern"), "members": members, "pairs": pairs}


def _planned_rules(mirror: Obj) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(member, entity path) → the rules Federator provisions there, from the operator's own planner."""
    ns, name = meta(mirror)
    try:
        spec = ServiceBusMirrorSpec.model_validate(spec_of(mirror))
    except ValidationError:
        return {}  # a spec this plugin does not understand (a newer operator): entities without rules
    found: dict[tuple[str, str], list[dict[str, str]]] = {}
    for sub in plan_mirror(name=name, namespace=ns, spec=spec).subscriptions:
        path = f"topics/{sub.topic}/subscriptions/{sub.name}"
        found[(sub.member, path)] = [
            {"name": r.name, "filter": r.sql_filter, **({"action": r.sql_action} if r.sql_action else {})}
            for r in sub.rules
        ]
    return found


def _pods_by_task(pods: list[Obj]) -> dict[tuple[str, str], list[Obj]]:
    found: dict[tuple[str, str], list[Obj]] = {}
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        found.setdefault((meta(pod)[0], labels.get(TASK_LABEL, "")), []).append(pod)
    return found


def _task(task: Obj, pods: dict[tuple[str, str], list[Obj]], follows: str | None) -> dict[str, Any]:
    status = status_of(task)
    app = status.get("sparkApplication") or {}
    return {
        **_resource(task),
        "follows": follows,
        "activeSourceMember": status.get("activeSourceMember"),
        "sparkApplication": {
            "apiVersion": app.get("apiVersion"),
            "name": app.get("name"),
            "state": app.get("state"),
            "pods": [_pod(p) for p in sorted(pods.get(meta(task), []), key=_driver_first)],
        },
        "eventsDeadLettered": status.get("eventsDeadLettered"),
        "lag": [row.to_dict() for row in lag_of(task)],
    }


def _driver_first(pod: Obj) -> tuple[bool, str]:
    return ((pod.get("metadata") or {}).get("labels") or {}).get("spark-role") != "driver", meta(pod)[1]


def _pod(pod: Obj) -> dict[str, Any]:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return {
        "name": meta(pod)[1],
        "role": ((pod.get("metadata") or {}).get("labels") or {}).get("spark-role", ""),
        "phase": status.get("phase", "Unknown"),
        "restarts": sum(int(c.get("restartCount") or 0) for c in containers),
        "reason": next(
            (
                str(w["reason"])
                for c in containers
                if (w := (c.get("state") or {}).get("waiting")) and w.get("reason")
            ),
            "",
        ),
    }


# ----------------------------------------------------------------------------------------------- drawing


def render(data: dict[str, Any], now: datetime | None = None, where: str = "") -> RenderableType:
    now = now or datetime.now(UTC)
    parts: list[RenderableType] = []
    parts += [_draw_group(g, now) for g in data["failoverGroups"]]
    parts += [_draw_mirror(m, now) for m in data["serviceBusMirrors"]]
    if data["replicationTasks"]:
        tree = Tree(Text("ReplicationTasks", style="bold"))
        for task in data["replicationTasks"]:
            _draw_task(tree, task, now)
        parts.append(tree)
    if not parts:
        scope = f" in {where}" if where else ""
        return Text(f"No FailoverGroups, ServiceBusMirrors or ReplicationTasks found{scope}.")
    return Group(*parts)


_LEVEL = {name: level for level, name in SEVERITY_NAMES.items()}


def _title(item: dict[str, Any], extra: str = "") -> Text:
    level = _LEVEL[item["severity"]]
    title = Text.assemble(
        output.mark(level),
        " ",
        (f"{item['kind']} ", "bold"),
        (f"{item['namespace']}/{item['name']}", "bold cyan"),
        "  ",
    )
    title.append_text(output.state_text(item["state"], item["reason"], level))
    if extra:
        title.append(f"  {extra}", style="dim")
    if item["generation"] is not None and item["observedGeneration"] not in (None, item["generation"]):
        title.append(
            f"  (status is of generation {item['observedGeneration']}, spec is {item['generation']})",
            style="yellow",
        )
    return title


def _draw_conditions(tree: Tree, item: dict[str, Any]) -> None:
    """Abnormal conditions in full, worst first, and Ready; the rest in one line. A message already
    shown (Stalled and Ready=False usually share one) is not repeated."""
    views = [
        ConditionView(c["type"], c["status"], c["reason"], c["message"], c["lastTransitionTime"])
        for c in item["conditions"]
    ]
    if not views:
        tree.add(Text(item["message"], style="yellow"))
        return
    normal, said = [], set()
    for view in views:
        if view.severity != OK or view.type == "Ready":
            repeated = view.message in said
            tree.add(output.condition_line(replace(view, message="(message as above)") if repeated else view))
            said.add(view.message)
        else:
            normal.append(f"{view.type}={view.status}")
    if normal:
        tree.add(Text("also " + ", ".join(normal), style="dim"))


def _draw_group(group: dict[str, Any], now: datetime) -> Tree:
    extra = f"{group['mode']} · {group['phase'] or 'not started'}"
    if group["failingMembers"]:  # in words too: the header's colour alone says nothing with NO_COLOR
        extra += f" · failing probes: {', '.join(group['failingMembers'])}"
    tree = Tree(_title(group, extra))
    _draw_conditions(tree, group)
    members = tree.add(Text("Members", style="bold"))
    for member in group["members"]:
        members.add(_member_line(member, group["probePeriodSeconds"], now))
    if group["drainPending"]:
        tree.add(
            Text(
                f"Draining {group['consumerMember']}: {', '.join(group['drainPending'])} still hold messages",
                style="yellow",
            )
        )
    tree.add(Text.assemble(("Endpoints ", "bold"), f"ConfigMap {group['endpointsConfigMap']}"))
    if group["tasks"]:
        tasks = tree.add(Text(f"ReplicationTasks following {group['name']}", style="bold"))
        for task in group["tasks"]:
            _draw_task(tasks, task, now)
    return tree


def _member_line(member: dict[str, Any], period: int, now: datetime) -> Text:
    probe = member["probe"]
    stale = probe is not None and stale_probe(probe, period, now)
    level = NOTE if probe is None or stale else OK if probe.get("healthy") else ERROR
    line = Text.assemble(
        output.mark(level),
        " ",
        (member["name"], "bold"),
        (" (primary)" if member["primary"] else ""),
        f"  {member['endpoint']}",
    )
    if member["roles"]:
        line.append(f"  ← {' + '.join(member['roles'])}", style="bold magenta")
    if probe is None:
        line.append("  not probed yet", style="yellow")
        return line
    when = ago(probe.get("lastProbeTime"), now)
    if probe.get("healthy"):
        line.append("  probe ", style="dim")
        line.append("healthy", style="green")
    else:
        line.append(f"  probe failed {probe.get('consecutiveFailures', 0)} times in a row", style="bold red")
    # Unchanged results are written once a minute, not at every probe: say how often it probes.
    line.append(f" (every {period}s, recorded {when})", style="dim")
    if stale:
        line.append(" STALE: no probe recorded since; is the operator running?", style="bold yellow")
    if not probe.get("healthy"):
        line.append(f": {probe.get('message', '')}")
    return line


def _draw_mirror(mirror: dict[str, Any], now: datetime) -> Tree:
    tree = Tree(_title(mirror, str(mirror["pattern"])))
    _draw_conditions(tree, mirror)
    members = tree.add(Text("Members", style="bold"))
    for member in mirror["members"]:
        level = OK if member["state"] == "Provisioned" else (3 if member["state"] == "Failed" else 1)
        line = Text.assemble(output.mark(level), " ", (str(member["name"]), "bold"), f"  {member['state']}")
        if member["reason"]:
            line.append(f" {member['reason']}: {member['message']}", style=output.STYLES[level])
        node = members.add(line)
        for entity in member["entities"]:
            branch = node.add(Text(entity["path"]))
            for rule in entity["rules"]:
                text = f"rule {rule['name']}: {rule['filter']}" + (
                    f"  →  {rule['action']}" if "action" in rule else ""
                )
                branch.add(Text(text, style="dim"))
    pairs = tree.add(Text("Pairs", style="bold"))
    for pair in mirror["pairs"]:
        line = Text(
            f"{pair.get('source')} → {pair.get('target')}: task {pair.get('taskName')} "
            f"({pair.get('ready')} {pair.get('reason', '')})"
        )
        node = pairs.add(line)
        if pair["task"] is not None:
            _draw_task(node, pair["task"], now)
    return tree


def _draw_task(parent: Tree, task: dict[str, Any], now: datetime) -> None:
    extra = []
    if task["follows"]:
        extra.append(f"its {task['follows']} follow{'s' if task['follows'] == 'source' else ''} the group")
    if task["activeSourceMember"]:
        extra.append(f"source member {task['activeSourceMember']}")
    node = parent.add(_title(task, " · ".join(extra)))
    _draw_conditions(node, task)
    app = task["sparkApplication"]
    if app["name"]:
        spark = node.add(
            Text.assemble(
                ("Spark ", "bold"),
                f"{app['apiVersion']} {app['name']}: ",
                (app["state"] or "no state yet", "bold"),
            )
        )
        for pod in app["pods"]:
            line = Text(f"{pod['role'] or 'pod'} {pod['name']} {pod['phase']}")
            if pod["restarts"]:
                line.append(f", {pod['restarts']} restarts", style="yellow")
            if pod["reason"]:
                line.append(f" ({pod['reason']})", style="red")
            spark.add(line)
    for row in task["lag"]:
        if row["secondsBehind"] is None and row["eventsBehind"] is None and row["eventsReplicated"] is None:
            node.add(Text.assemble(("Lag ", "bold"), ("no figures yet (no batch reported)", "dim")))
            continue
        where = f"partition {row['partition']}: " if row["partition"] is not None else ""
        line = Text.assemble(("Lag ", "bold"), where, f"{output.seconds(row['secondsBehind'])} behind")
        if row["eventsBehind"] is not None:
            line.append(f", {output.count(row['eventsBehind'])} events behind")
        line.append(f" · {output.count(row['eventsReplicated'])} replicated")
        if row["lastBatchTime"]:
            line.append(f" · last batch {ago(row['lastBatchTime'], now)}", style="dim")
        if stale_batch(row["lastBatchTime"], now):
            line.append(" STALE: figures of that batch, none since", style="bold yellow")
        node.add(line)
