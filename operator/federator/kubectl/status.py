"""`kubectl federator status`: one tree per FailoverGroup (members and probes → tasks following it → Spark
→ lag), per ServiceBusMirror (members, entities and rules → pairs → tasks) and per ReplicationApplication
(Spark → the member tasks no group or mirror shows), then the other tasks. A task's row names the
application it runs in.
Built once as typed views (status_views.py; `-o json|yaml` prints their `to_dict()`), then drawn as a rich
tree; worst first."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime

from pydantic import ValidationError
from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from federator.failover.draining import drain_words
from federator.kubectl import output
from federator.kubectl.cluster import TASK_LABEL, Snapshot
from federator.kubectl.model import (
    ERROR,
    NOTE,
    OK,
    SEVERITY_NAMES,
    WARNING,
    Obj,
    ago,
    application_of,
    application_status,
    following_groups,
    group_status,
    lag_of,
    meta,
    mirror_status,
    spec_of,
    stale_batch,
    stale_probe,
    task_status,
    worst_first,
)
from federator.kubectl.status_views import (
    ApplicationMemberView,
    ApplicationView,
    EntityView,
    GroupView,
    MemberView,
    MirrorMemberView,
    MirrorView,
    PairView,
    PodView,
    ResourceView,
    SparkView,
    StatusView,
    TaskView,
)
from federator.planning.mirror import plan_mirror
from federator.planning.task import APPLICATION_LABEL
from federator_contract.api.replicationapplication import SparkApplicationStatus
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec

MIRROR_LABEL = "federator.io/servicebusmirror"
OUR_KINDS = "FailoverGroups, ServiceBusMirrors, ReplicationApplications or ReplicationTasks"
"""What status shows, as an empty namespace names them."""


def build(snapshot: Snapshot) -> StatusView:
    """The status of everything in the snapshot (what `-o json|yaml` prints, as `to_dict()`)."""
    pods = _pods_by(TASK_LABEL, snapshot.spark_pods)
    shown: dict[tuple[str, str], str] = {}  # task → the first tree that draws it
    groups = []
    for group in worst_first(snapshot.groups):
        ns, name = meta(group)
        following = [t for t in snapshot.tasks if meta(t)[0] == ns and name in following_groups(t)]
        _shown_under(shown, following, f"FailoverGroup {ns}/{name}")
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
        _shown_under(shown, owned.values(), f"ServiceBusMirror {ns}/{name}")
        mirrors.append(_mirror(mirror, owned, pods))
    app_pods = _pods_by(APPLICATION_LABEL, snapshot.spark_pods)
    applications = []
    for application in worst_first(snapshot.applications):
        ns, name = meta(application)
        members = [t for t in snapshot.tasks if meta(t)[0] == ns and application_of(t) == name]
        applications.append(_application(application, worst_first(members), shown, pods, app_pods))
        _shown_under(shown, members, f"ReplicationApplication {ns}/{name}")
    others = [t for t in worst_first(snapshot.tasks) if meta(t) not in shown]
    return StatusView(
        failover_groups=groups,
        service_bus_mirrors=mirrors,
        replication_applications=applications,
        replication_tasks=[_task(t, pods, None) for t in others],
    )


def _shown_under(shown: dict[tuple[str, str], str], tasks: Iterable[Obj], where: str) -> None:
    for task in tasks:
        shown.setdefault(meta(task), where)


def _group(group: Obj, tasks: list[TaskView]) -> GroupView:
    spec, status = spec_of(group), group_status(group)
    probes = {p.member: p for p in status.probes}
    members = []
    for member in spec.get("members") or []:
        name = member.get("name")
        where = (("producers", status.producer_member), ("consumers", status.consumer_member))
        members.append(
            MemberView(
                name=name,
                endpoint=member.get("endpoint"),
                primary=name == spec.get("primaryMember"),
                roles=[role for role, who in where if who == name],
                probe=probes.get(name),
            )
        )
    failing = [m.name for m in members if m.probe is not None and not m.probe.healthy]
    resource = ResourceView.fields_of(group)
    if failing and _LEVEL[resource["severity"]] < WARNING:
        resource["severity"] = SEVERITY_NAMES[WARNING]  # it works, but a member is down: worth a look
    return GroupView(
        **resource,
        failing_members=failing,
        probe_period_seconds=int((spec.get("probe") or {}).get("periodSeconds", 10)),
        mode=spec.get("mode", "manual"),
        phase=status.phase,
        primary_member=spec.get("primaryMember"),
        active_member=spec.get("activeMember"),
        producer_member=status.producer_member,
        consumer_member=status.consumer_member,
        producer_since=status.producer_since,
        consumer_since=status.consumer_since,
        drain_pending=status.drain_pending,
        endpoints_config_map=(spec.get("publishing") or {}).get("configMapName")
        or f"{meta(group)[1]}-endpoints",
        members=members,
        tasks=tasks,
    )


def _mirror(mirror: Obj, owned: dict[str, Obj], pods: dict[tuple[str, str], list[Obj]]) -> MirrorView:
    status = mirror_status(mirror)
    rules = _planned_rules(mirror)
    members = [
        MirrorMemberView(
            name=m.name,
            state=m.state,
            reason=m.reason,
            message=m.message,
            entities=[EntityView(path=e, rules=rules.get((m.name, e), [])) for e in m.entities],
        )
        for m in status.members
    ]
    pairs = []
    for pair in status.pairs:
        task = owned.get(pair.task_name)
        pairs.append(
            PairView(**pair.model_dump(), task=_task(task, pods, None) if task is not None else None)
        )
    pattern = spec_of(mirror).get("pattern")
    return MirrorView(**ResourceView.fields_of(mirror), pattern=pattern, members=members, pairs=pairs)


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


def _application(
    application: Obj,
    members: list[Obj],
    shown: dict[tuple[str, str], str],
    pods: dict[tuple[str, str], list[Obj]],
    app_pods: dict[tuple[str, str], list[Obj]],
) -> ApplicationView:
    """The application and its member tasks: drawn here in full unless a group or a mirror draws them."""
    views = [
        ApplicationMemberView(
            name=meta(t)[1],
            shown_under=shown.get(meta(t)),
            task=None if meta(t) in shown else _task(t, pods, None),
        )
        for t in members
    ]
    status = application_status(application)
    return ApplicationView(
        **ResourceView.fields_of(application),
        scheduling=(spec_of(application).get("scheduling") or {}).get("mode") or "FAIR",
        spark_application=_spark(status.spark_application, app_pods.get(meta(application), [])),
        members=views,
    )


def _pods_by(label: str, pods: list[Obj]) -> dict[tuple[str, str], list[Obj]]:
    """Pods by (namespace, the value of `label`): the task or the application they run."""
    found: dict[tuple[str, str], list[Obj]] = {}
    for pod in pods:
        value = ((pod.get("metadata") or {}).get("labels") or {}).get(label)
        if value:
            found.setdefault((meta(pod)[0], value), []).append(pod)
    return found


def _spark(app: SparkApplicationStatus | None, pods: list[Obj]) -> SparkView:
    return SparkView(
        api_version=app.api_version if app else None,
        name=app.name if app else None,
        state=app.state if app else None,
        pods=[_pod(p) for p in sorted(pods, key=_driver_first)],
    )


def _task(task: Obj, pods: dict[tuple[str, str], list[Obj]], follows: str | None) -> TaskView:
    status = task_status(task)
    return TaskView(
        **ResourceView.fields_of(task),
        follows=follows,
        application=application_of(task),
        active_source_member=status.active_source_member,
        spark_application=_spark(status.spark_application, pods.get(meta(task), [])),
        events_dead_lettered=status.events_dead_lettered,
        lag=lag_of(task),
    )


def _driver_first(pod: Obj) -> tuple[bool, str]:
    return ((pod.get("metadata") or {}).get("labels") or {}).get("spark-role") != "driver", meta(pod)[1]


def _pod(pod: Obj) -> PodView:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return PodView(
        name=meta(pod)[1],
        role=((pod.get("metadata") or {}).get("labels") or {}).get("spark-role", ""),
        phase=status.get("phase", "Unknown"),
        restarts=sum(int(c.get("restartCount") or 0) for c in containers),
        reason=next(
            (
                str(w["reason"])
                for c in containers
                if (w := (c.get("state") or {}).get("waiting")) and w.get("reason")
            ),
            "",
        ),
    )


# ----------------------------------------------------------------------------------------------- drawing


def render(data: StatusView, now: datetime | None = None, where: str = "") -> RenderableType:
    now = now or datetime.now(UTC)
    parts: list[RenderableType] = []
    parts += [_draw_group(g, now) for g in data.failover_groups]
    parts += [_draw_mirror(m, now) for m in data.service_bus_mirrors]
    parts += [_draw_application(a, now) for a in data.replication_applications]
    if data.replication_tasks:
        tree = Tree(Text("ReplicationTasks", style="bold"))
        for task in data.replication_tasks:
            _draw_task(tree, task, now)
        parts.append(tree)
    if not parts:
        scope = f" in {where}" if where else ""
        return Text(f"No {OUR_KINDS} found{scope}.")
    return Group(*parts)


_LEVEL = {name: level for level, name in SEVERITY_NAMES.items()}


def _title(item: ResourceView, extra: str = "") -> Text:
    level = _LEVEL[item.severity]
    title = Text.assemble(
        output.mark(level),
        " ",
        (f"{item.kind} ", "bold"),
        (f"{item.namespace}/{item.name}", "bold cyan"),
        "  ",
    )
    title.append_text(output.state_text(item.state, item.reason, level))
    if extra:
        title.append(f"  {extra}", style="dim")
    if item.generation is not None and item.observed_generation not in (None, item.generation):
        title.append(
            f"  (status is of generation {item.observed_generation}, spec is {item.generation})",
            style="yellow",
        )
    return title


def _draw_conditions(tree: Tree, item: ResourceView) -> None:
    """Abnormal conditions in full, worst first, and Ready; the rest in one line. A message already
    shown (Stalled and Ready=False usually share one) is not repeated."""
    if not item.conditions:
        tree.add(Text(item.message, style="yellow"))
        return
    normal, said = [], set()
    for view in item.conditions:
        if view.severity != OK or view.type == "Ready":
            repeated = view.message in said
            shown = replace(view, message="(message as above)") if repeated else view
            tree.add(output.condition_line(shown))
            said.add(view.message)
        else:
            normal.append(f"{view.type}={view.status}")
    if normal:
        tree.add(Text("also " + ", ".join(normal), style="dim"))


def _draw_group(group: GroupView, now: datetime) -> Tree:
    extra = f"{group.mode} · {group.phase or 'not started'}"
    if group.failing_members:  # in words too: the header's colour alone says nothing with NO_COLOR
        extra += f" · failing probes: {', '.join(group.failing_members)}"
    tree = Tree(_title(group, extra))
    _draw_conditions(tree, group)
    members = tree.add(Text("Members", style="bold"))
    for member in group.members:
        members.add(_member_line(member, group.probe_period_seconds, now))
    if group.drain_pending:
        words = drain_words(group.consumer_member, group.drain_pending)
        tree.add(Text(words[0].upper() + words[1:], style="yellow"))
    tree.add(Text.assemble(("Endpoints ", "bold"), f"ConfigMap {group.endpoints_config_map}"))
    if group.tasks:
        tasks = tree.add(Text(f"ReplicationTasks following {group.name}", style="bold"))
        for task in group.tasks:
            _draw_task(tasks, task, now)
    return tree


def _member_line(member: MemberView, period: int, now: datetime) -> Text:
    probe = member.probe
    stale = probe is not None and stale_probe(probe, period, now)
    level = NOTE if probe is None or stale else OK if probe.healthy else ERROR
    line = Text.assemble(
        output.mark(level),
        " ",
        (str(member.name), "bold"),
        (" (primary)" if member.primary else ""),
        f"  {member.endpoint}",
    )
    if member.roles:
        line.append(f"  ← {' + '.join(member.roles)}", style="bold magenta")
    if probe is None:
        line.append("  not probed yet", style="yellow")
        return line
    when = ago(probe.last_probe_time, now)
    if probe.healthy:
        line.append("  probe ", style="dim")
        line.append("healthy", style="green")
    else:
        line.append(f"  probe failed {probe.consecutive_failures} times in a row", style="bold red")
    # Unchanged results are written once a minute, not at every probe: say how often it probes.
    line.append(f" (every {period}s, recorded {when})", style="dim")
    if stale:
        line.append(" STALE: no probe recorded since; is the operator running?", style="bold yellow")
    if not probe.healthy:
        line.append(f": {probe.message}")
    return line


def _draw_mirror(mirror: MirrorView, now: datetime) -> Tree:
    tree = Tree(_title(mirror, str(mirror.pattern)))
    _draw_conditions(tree, mirror)
    members = tree.add(Text("Members", style="bold"))
    for member in mirror.members:
        level = OK if member.state == "Provisioned" else (3 if member.state == "Failed" else 1)
        line = Text.assemble(output.mark(level), " ", (member.name, "bold"), f"  {member.state}")
        if member.reason:
            line.append(f" {member.reason}: {member.message}", style=output.STYLES[level])
        node = members.add(line)
        for entity in member.entities:
            branch = node.add(Text(entity.path))
            for rule in entity.rules:
                text = f"rule {rule['name']}: {rule['filter']}" + (
                    f"  →  {rule['action']}" if "action" in rule else ""
                )
                branch.add(Text(text, style="dim"))
    pairs = tree.add(Text("Pairs", style="bold"))
    for pair in mirror.pairs:
        node = pairs.add(
            Text(f"{pair.source} → {pair.target}: task {pair.task_name} ({pair.ready} {pair.reason})")
        )
        if pair.task is not None:
            _draw_task(node, pair.task, now)
    return tree


def _draw_application(application: ApplicationView, now: datetime) -> Tree:
    count = len(application.members)
    tree = Tree(
        _title(application, f"{application.scheduling} · {count} member task{'' if count == 1 else 's'}")
    )
    _draw_conditions(tree, application)
    _draw_spark(tree, application.spark_application)
    if not application.members:
        tree.add(Text("no ReplicationTask names it in spec.runtime.applicationRef", style="dim"))
        return tree
    members = tree.add(Text(f"ReplicationTasks running in {application.name}", style="bold"))
    for member in application.members:
        if member.task is not None:
            _draw_task(members, member.task, now)
        else:
            where = f"{application.namespace}/{member.name}"
            members.add(
                Text.assemble(
                    ("ReplicationTask ", "bold"), where, (f"  shown under {member.shown_under}", "dim")
                )
            )
    return tree


def _draw_spark(node: Tree, app: SparkView) -> None:
    if not app.name:
        return
    spark = node.add(
        Text.assemble(
            ("Spark ", "bold"), f"{app.api_version} {app.name}: ", (app.state or "no state yet", "bold")
        )
    )
    for pod in app.pods:
        line = Text(f"{pod.role or 'pod'} {pod.name} {pod.phase}")
        if pod.restarts:
            line.append(f", {pod.restarts} restarts", style="yellow")
        if pod.reason:
            line.append(f" ({pod.reason})", style="red")
        spark.add(line)


def _draw_task(parent: Tree, task: TaskView, now: datetime) -> None:
    extra = []
    if task.follows:
        extra.append(f"its {task.follows} follow{'s' if task.follows == 'source' else ''} the group")
    if task.active_source_member:
        extra.append(f"source member {task.active_source_member}")
    if task.application:
        extra.append(f"application {task.application}")
    node = parent.add(_title(task, " · ".join(extra)))
    _draw_conditions(node, task)
    _draw_spark(node, task.spark_application)
    for row in task.lag:
        if row.seconds_behind is None and row.events_behind is None and row.events_replicated is None:
            node.add(Text.assemble(("Lag ", "bold"), ("no figures yet (no batch reported)", "dim")))
            continue
        where = f"partition {row.partition}: " if row.partition is not None else ""
        line = Text.assemble(("Lag ", "bold"), where, f"{output.seconds(row.seconds_behind)} behind")
        if row.events_behind is not None:
            line.append(f", {output.count(row.events_behind)} events behind")
        line.append(f" · {output.count(row.events_replicated)} replicated")
        if row.last_batch_time:
            line.append(f" · last batch {ago(row.last_batch_time, now)}", style="dim")
        if stale_batch(row.last_batch_time, now):
            line.append(" STALE: figures of that batch, none since", style="bold yellow")
        node.add(line)
