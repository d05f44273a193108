"""The commands' work: read the cluster, hand the objects to the module that shapes them, print. `--watch`
redraws in place on a terminal and prints a new snapshot on a pipe whenever something changed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from rich.console import RenderableType
from rich.live import Live
from rich.rule import Rule

from federator.kubectl import lag as lag_view
from federator.kubectl import output
from federator.kubectl import status as status_view
from federator.kubectl.cluster import Cluster, PluginError, Snapshot, group_name, parse_reference
from federator.kubectl.kubeconfig import Target
from federator.kubectl.model import application_of, following_groups, meta
from federator_contract.api.kinds import BY_KIND

MIRROR_LABEL = status_view.MIRROR_LABEL
_OUR_KINDS = status_view.OUR_KINDS


async def read(cluster: Cluster, reference: str | None, all_namespaces: bool) -> Snapshot:
    """Everything in the namespace (or all), or one object and what belongs to it. A namespace that does
    not exist is an error, not an empty one."""
    namespace = None if all_namespaces else cluster.target.namespace
    snapshot = await cluster.snapshot(namespace)
    if reference is None:
        if not (snapshot.groups or snapshot.mirrors or snapshot.tasks or snapshot.applications):
            await cluster.require_namespace(namespace)
        return snapshot
    kind, name = parse_reference(reference)
    listed = {
        BY_KIND["FailoverGroup"]: snapshot.groups,
        BY_KIND["ServiceBusMirror"]: snapshot.mirrors,
        BY_KIND["ReplicationTask"]: snapshot.tasks,
        BY_KIND["ReplicationApplication"]: snapshot.applications,
    }
    found = [(k, o) for k, objs in listed.items() if kind in (None, k) for o in objs if meta(o)[1] == name]
    if not found:
        await cluster.require_namespace(namespace)
        where = scope(cluster, all_namespaces)
        if kind is None:
            raise PluginError(
                f"no FailoverGroup, ServiceBusMirror, ReplicationApplication or ReplicationTask named {name} "
                f"in {where}"
            )
        raise PluginError(f"{kind.singular} {name} not found in {where}")
    if len(found) > 1:
        which = ", ".join(f"{k.short_names[0]}/{name} in namespace {meta(o)[0]}" for k, o in found)
        raise PluginError(f"{name} is ambiguous: {which}; say which with KIND/NAME and -n")
    kind, obj = found[0]
    ns = meta(obj)[0]
    tasks = [t for t in snapshot.tasks if meta(t)[0] == ns]
    if kind is BY_KIND["FailoverGroup"]:
        return Snapshot(
            groups=[obj],
            tasks=[t for t in tasks if name in following_groups(t)],
            spark_pods=snapshot.spark_pods,
        )
    if kind is BY_KIND["ServiceBusMirror"]:
        owned = [
            t for t in tasks if ((t.get("metadata") or {}).get("labels") or {}).get(MIRROR_LABEL) == name
        ]
        return Snapshot(mirrors=[obj], tasks=owned, spark_pods=snapshot.spark_pods)
    if kind is BY_KIND["ReplicationApplication"]:
        members = [t for t in tasks if application_of(t) == name]
        return Snapshot(applications=[obj], tasks=members, spark_pods=snapshot.spark_pods)
    return Snapshot(tasks=[obj], spark_pods=snapshot.spark_pods)


def scope(cluster: Cluster, all_namespaces: bool) -> str:
    return "any namespace" if all_namespaces else f"namespace {cluster.target.namespace}"


async def show_status(
    target: Target, reference: str | None, all_namespaces: bool, fmt: str, watch: bool, interval: float
) -> None:
    async with Cluster.connect(target) as cluster:

        async def frame() -> tuple[Any, RenderableType]:
            view = status_view.build(await read(cluster, reference, all_namespaces))
            return view.to_dict(), status_view.render(view, where=scope(cluster, all_namespaces))

        await _show(frame, fmt, watch, interval)


async def show_lag(target: Target, all_namespaces: bool, fmt: str, watch: bool, interval: float) -> None:
    async with Cluster.connect(target) as cluster:

        async def frame() -> tuple[Any, RenderableType]:
            snapshot = await read(cluster, None, all_namespaces)
            found = lag_view.rows(snapshot.tasks)
            where = scope(cluster, all_namespaces)
            table = lag_view.table(found, all_namespaces, wide=fmt == "wide", where=where)
            return [row.to_dict() for row in found], table

        await _show(frame, fmt, watch, interval)


async def _show(
    frame: Callable[[], Awaitable[tuple[Any, RenderableType]]], fmt: str, watch: bool, interval: float
) -> None:
    out = output.console()
    fmt = "text" if fmt == "wide" else fmt  # the table's columns are chosen in frame()
    data, drawing = await frame()
    if not watch:
        _print(out, data, drawing, fmt)
        return
    if out.is_terminal and fmt == "text":
        with Live(drawing, console=out, auto_refresh=False, screen=False) as live:
            while True:
                await asyncio.sleep(interval)
                live.update((await frame())[1], refresh=True)
    # On a pipe: a new snapshot only when the data changed, each under a time rule.
    last = None
    while True:
        if data != last:
            if fmt == "text":
                out.print(Rule(datetime.now(UTC).strftime("%H:%M:%S UTC"), style="dim"))
            _print(out, data, drawing, fmt)
            last = data
        await asyncio.sleep(interval)
        data, drawing = await frame()


def _print(out: Any, data: Any, drawing: RenderableType, fmt: str) -> None:
    if fmt == "text":
        out.print(drawing, crop=False)  # a table wider than the terminal runs on, as kubectl's
    else:
        output.dump(data, fmt, out)
    out.file.flush()


async def switch(
    target: Target,
    group: str,
    member: str | None,
    planned: bool | None,
    yes: bool,
    follow: bool,
    timeout: float | None,
) -> None:
    from federator.kubectl.failover import run_switch

    name = group_name(group)
    async with Cluster.connect(target) as cluster:
        await run_switch(cluster, name, member, planned=planned, yes=yes, wait=follow, timeout=timeout)


async def drill_group(target: Target, group: str, yes: bool, timeout: float | None, fmt: str) -> int:
    from federator.kubectl.drill import run_drill

    async with Cluster.connect(target) as cluster:
        return await run_drill(cluster, group_name(group), yes=yes, timeout=timeout, fmt=fmt)


async def write_report(target: Target, out: str | None, all_namespaces: bool, tail: int) -> None:
    from federator.kubectl.report import collect

    async with Cluster.connect(target) as cluster:
        await collect(cluster, out, None if all_namespaces else target.namespace, tail)


async def draw(target: Target, reference: str | None, all_namespaces: bool, fmt: str) -> None:
    from federator.topology import GraphvizMissing, build, render

    async with Cluster.connect(target) as cluster:
        snapshot = await read(cluster, reference, all_namespaces)
        where = scope(cluster, all_namespaces)
    objects = [*snapshot.groups, *snapshot.mirrors, *_not_generated(snapshot)]
    if not objects:
        # As `kubectl get` with nothing to show: a note on stderr, no picture of nothing on stdout.
        note = f"No {_OUR_KINDS} found in {where}: nothing to draw."
        output.console(stderr=True).print(note, soft_wrap=True)
        return
    try:
        picture = render(build(objects), fmt)
    except GraphvizMissing as problem:
        raise PluginError(str(problem)) from None
    output.console().file.write(picture)


def _not_generated(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Tasks, less those a mirror in the picture generates: the mirror draws them from its own plan."""
    mirrors = {meta(m) for m in snapshot.mirrors}
    return [
        t
        for t in snapshot.tasks
        if (meta(t)[0], ((t.get("metadata") or {}).get("labels") or {}).get(MIRROR_LABEL, "")) not in mirrors
    ]
