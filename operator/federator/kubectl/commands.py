"""The commands' work: read the cluster, hand the objects to the module that shapes them, print. `--watch`
redraws in place on a terminal and prints a new snapshot on a pipe whenever something changed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from rich.live import Live
from rich.rule import Rule

from federator.kubectl import lag as lag_view
from federator.kubectl import output
from federator.kubectl import status as status_view
from federator.kubectl.cluster import Cluster, PluginError, Snapshot, parse_reference
from federator.kubectl.kubeconfig import Target
from federator.kubectl.model import following_groups, meta
from federator_contract.api.kinds import BY_KIND

MIRROR_LABEL = status_view.MIRROR_LABEL


async def read(cluster: Cluster, reference: str | None, all_namespaces: bool) -> Snapshot:
    """Everything in the namespace (or all), or one object and what belongs to it."""
    namespace = None if all_namespaces else cluster.target.namespace
    snapshot = await cluster.snapshot(namespace)
    if reference is None:
        return snapshot
    kind, name = parse_reference(reference)
    listed = {
        "FailoverGroup": snapshot.groups,
        "ServiceBusMirror": snapshot.mirrors,
        "ReplicationTask": snapshot.tasks,
    }[kind.kind]
    found = [o for o in listed if meta(o)[1] == name]
    if not found:
        where = "any namespace" if all_namespaces else f"namespace {cluster.target.namespace}"
        raise PluginError(f"{kind.singular} {name} not found in {where}")
    obj = found[0]
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
    return Snapshot(tasks=[obj], spark_pods=snapshot.spark_pods)


async def show_status(
    target: Target, reference: str | None, all_namespaces: bool, fmt: str, watch: bool, interval: float
) -> None:
    async with Cluster.connect(target) as cluster:

        async def frame() -> tuple[Any, RenderableType]:
            data = status_view.build(await read(cluster, reference, all_namespaces))
            return data, status_view.render(data)

        await _show(frame, fmt, watch, interval)


async def show_lag(target: Target, all_namespaces: bool, fmt: str, watch: bool, interval: float) -> None:
    async with Cluster.connect(target) as cluster:

        async def frame() -> tuple[Any, RenderableType]:
            snapshot = await read(cluster, None, all_namespaces)
            found = lag_view.rows(snapshot.tasks)
            return found, lag_view.table(found, all_namespaces)

        await _show(frame, fmt, watch, interval)


async def _show(
    frame: Callable[[], Awaitable[tuple[Any, RenderableType]]], fmt: str, watch: bool, interval: float
) -> None:
    out = output.console()
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
        out.print(drawing)
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

    async with Cluster.connect(target) as cluster:
        await run_switch(cluster, group, member, planned=planned, yes=yes, wait=follow, timeout=timeout)


async def write_report(target: Target, out: Path, all_namespaces: bool, tail: int) -> None:
    from federator.kubectl.report import collect

    async with Cluster.connect(target) as cluster:
        await collect(cluster, out, None if all_namespaces else target.namespace, tail)


async def draw(target: Target, reference: str | None, all_namespaces: bool, fmt: str) -> None:
    from federator.topology import build, render

    async with Cluster.connect(target) as cluster:
        snapshot = await read(cluster, reference, all_namespaces)
    objects = [*snapshot.groups, *snapshot.mirrors, *_not_generated(snapshot)]
    output.console().file.write(render(build(objects), fmt))


def _not_generated(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Tasks, less those a mirror in the picture generates: the mirror draws them from its own plan."""
    mirrors = {meta(m) for m in snapshot.mirrors}
    return [
        t
        for t in snapshot.tasks
        if (meta(t)[0], ((t.get("metadata") or {}).get("labels") or {}).get(MIRROR_LABEL, "")) not in mirrors
    ]
