"""`kubectl federator report`: a support bundle (zip) of what a maintainer needs to help, with every
secret redacted before it is written (redact.py).

    README.txt                              what was collected, from where, and what could not be
    summary.txt, status.json, lag.json      `status` and `lag` as the plugin shows them
    resources/<ns>/<Kind>/<name>.yaml       our resources, their ConfigMaps, SparkApplications, Spark pods,
                                            the Secrets they reference (keys only)
    events/<ns>.yaml                        Events about any of those
    logs/operator/<ns>/<pod>.log            operator logs (tail; `.previous.log` after a restart)
    logs/spark/<ns>/<pod>.log               Spark driver logs (tail)
    metrics/operator/<ns>/<pod>.txt         the operator's /metrics, through the API server's pod proxy
"""

from __future__ import annotations

import base64
import io
import json
import sys
import urllib.parse
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from federator import __version__, plainyaml
from federator.kube.resources import CONFIGMAPS, PODS, SECRETS
from federator.kubectl import lag as lag_view
from federator.kubectl import output
from federator.kubectl import status as status_view
from federator.kubectl.cluster import (
    MANAGED_SELECTOR,
    OPERATOR_SELECTOR,
    SPARK_APPLICATIONS,
    Cluster,
    PluginError,
    Snapshot,
)
from federator.kubectl.model import Obj, meta
from federator.kubectl.redact import Redactor

METRICS_PORT_NAME = "metrics"


class Bundle:
    """Files of the zip, redacted on the way in."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.files: dict[str, str] = {}
        self.problems: list[str] = []

    def add_object(self, obj: Obj) -> None:
        ns, name = meta(obj)
        clean = self.redactor.object(_without_managed_fields(obj))
        path = f"resources/{ns or '_cluster'}/{obj.get('kind', 'Unknown')}/{name}.yaml"
        self.files[path] = plainyaml.dump(clean)

    def add_text(self, path: str, text: str) -> None:
        self.files[path] = self.redactor.text(text)

    def add_data(self, path: str, data: Any) -> None:
        self.files[path] = json.dumps(self.redactor.object(data), indent=2, default=str)


async def collect(cluster: Cluster, out: str | None, namespace: str | None, tail: int) -> None:
    """Write the bundle to `out`: a file, a directory (a file named by the time in it), `-` (standard
    output) or None (a file named by the time, here)."""
    console = output.console(stderr=True)
    path = destination(out)
    snapshot = await cluster.snapshot(namespace)
    ours = [*snapshot.groups, *snapshot.mirrors, *snapshot.applications, *snapshot.tasks]
    if not ours:
        await cluster.require_namespace(namespace)
    namespaces = sorted({meta(o)[0] for o in ours} | ({namespace} if namespace else set()))
    secrets = await _referenced_secrets(cluster, ours)
    bundle = Bundle(Redactor(_secret_values(secrets)))
    children = await _children(cluster, namespaces, snapshot)
    for obj in [*ours, *children, *secrets]:
        bundle.add_object(obj)
    await _events(
        cluster, bundle, namespaces, {(meta(o)[0], o.get("kind"), meta(o)[1]) for o in [*ours, *children]}
    )
    view, lag_rows = status_view.build(snapshot), lag_view.rows(snapshot.tasks)
    bundle.add_data("status.json", view.to_dict())
    bundle.add_data("lag.json", [row.to_dict() for row in lag_rows])
    bundle.add_text(
        "summary.txt", _plain(status_view.render(view)) + "\n" + _plain(lag_view.table(lag_rows, True))
    )
    await _operator(cluster, bundle, tail)
    for pod in snapshot.spark_pods:
        if ((pod.get("metadata") or {}).get("labels") or {}).get("spark-role") == "driver":
            await _logs(cluster, bundle, pod, "spark", tail)
    bundle.add_text("README.txt", _readme(cluster, namespace, bundle))
    _write(path, bundle)
    console.print(
        f"wrote {output.safe(path or 'the bundle to standard output')}: {len(bundle.files)} files"
        + (f", {len(bundle.problems)} not collected (see README.txt)" if bundle.problems else ""),
        soft_wrap=True,
    )


async def _children(cluster: Cluster, namespaces: list[str], snapshot: Snapshot) -> list[Obj]:
    found: list[Obj] = list(snapshot.spark_pods)
    for ns in namespaces:
        found += await cluster.items(CONFIGMAPS, ns, MANAGED_SELECTOR)
        for ref in SPARK_APPLICATIONS:
            found += await cluster.items(ref, ns, MANAGED_SELECTOR, required=False)
    # A group's endpoints ConfigMap carries no label of ours everywhere: fetched by name.
    for group in snapshot.groups:
        ns, name = meta(group)
        cm_name = ((group.get("spec") or {}).get("publishing") or {}).get(
            "configMapName"
        ) or f"{name}-endpoints"
        if not any(meta(o) == (ns, cm_name) and o.get("kind") == "ConfigMap" for o in found):
            cm = await cluster.get(CONFIGMAPS, ns, cm_name)
            if cm is not None:
                found.append({"apiVersion": "v1", "kind": "ConfigMap", **cm})
    return found


def _secret_refs(value: Any, found: set[str]) -> None:
    """Names of every Secret a spec references (`secretRef`, `connectionSecretRef`, `…SecretRef`)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if (
                key.lower().endswith("secretref")
                and isinstance(inner, dict)
                and isinstance(inner.get("name"), str)
            ):
                found.add(inner["name"])
            _secret_refs(inner, found)
    elif isinstance(value, list):
        for inner in value:
            _secret_refs(inner, found)


async def _referenced_secrets(cluster: Cluster, ours: list[Obj]) -> list[Obj]:
    """The Secrets our resources reference, as read (their values feed the redactor, never the bundle).
    Without the right to read Secrets, pattern redaction still applies."""
    names: dict[str, set[str]] = {}
    for obj in ours:
        _secret_refs(obj.get("spec") or {}, names.setdefault(meta(obj)[0], set()))
    found = []
    for ns, wanted in sorted(names.items()):
        for name in sorted(wanted):
            try:
                secret = await cluster.get(SECRETS, ns, name)
            except PluginError:
                continue
            if secret is not None:
                found.append({"apiVersion": "v1", "kind": "Secret", **secret})
    return found


def _secret_values(secrets: list[Obj]) -> dict[str, str]:
    values: dict[str, str] = {}
    for secret in secrets:
        name = meta(secret)[1]
        for key, encoded in (secret.get("data") or {}).items():
            try:
                value = base64.b64decode(encoded).decode()
            except (ValueError, UnicodeDecodeError):
                continue
            values[value] = f"secret/{name}/{key}"
        for key, value in (secret.get("stringData") or {}).items():
            values[str(value)] = f"secret/{name}/{key}"
    return values


async def _events(
    cluster: Cluster, bundle: Bundle, namespaces: list[str], involved: set[tuple[str, Any, str]]
) -> None:
    for ns in namespaces:
        events = [
            e
            for e in await cluster.events(ns)
            if (ns, (e.get("involvedObject") or {}).get("kind"), (e.get("involvedObject") or {}).get("name"))
            in involved
        ]
        events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        bundle.add_text(f"events/{ns}.yaml", plainyaml.dump(bundle.redactor.object(events)))


async def _operator(cluster: Cluster, bundle: Bundle, tail: int) -> None:
    try:
        pods = await cluster.items(PODS, None, OPERATOR_SELECTOR)
    except PluginError as problem:
        bundle.problems.append(f"operator pods ({OPERATOR_SELECTOR}): {problem}")
        return
    if not pods:
        bundle.problems.append(f"no operator pod found in any namespace (label {OPERATOR_SELECTOR})")
    for pod in pods:
        bundle.add_object(pod)
        await _logs(cluster, bundle, pod, "operator", tail)
        await _metrics(cluster, bundle, pod)


async def _logs(cluster: Cluster, bundle: Bundle, pod: Obj, folder: str, tail: int) -> None:
    ns, name = meta(pod)
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for container in (pod.get("spec") or {}).get("containers") or [{"name": ""}]:
        cname = container.get("name", "")
        suffix = f".{cname}" if len((pod.get("spec") or {}).get("containers") or []) > 1 else ""
        restarted = any(s.get("name") == cname and s.get("restartCount") for s in statuses)
        for previous in (False, True) if restarted else (False,):
            query = urllib.parse.urlencode(
                {
                    "tailLines": tail,
                    **({"container": cname} if cname else {}),
                    **({"previous": "true"} if previous else {}),
                }
            )
            path = f"logs/{folder}/{ns}/{name}{suffix}{'.previous' if previous else ''}.log"
            await _fetch(cluster, bundle, f"{PODS.path(ns, name, 'log')}?{query}", path, "no log")


async def _metrics(cluster: Cluster, bundle: Bundle, pod: Obj) -> None:
    ns, name = meta(pod)
    ports = [p for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or []]
    port = next((p.get("containerPort") for p in ports if p.get("name") == METRICS_PORT_NAME), None)
    path = f"metrics/operator/{ns}/{name}.txt"
    if port is None:
        bundle.problems.append(f"{path}: the pod declares no port named {METRICS_PORT_NAME}")
        return
    await _fetch(cluster, bundle, f"{PODS.path(ns, f'{name}:{port}', 'proxy')}/metrics", path, "not found")


async def _fetch(cluster: Cluster, bundle: Bundle, api_path: str, path: str, missing: str) -> None:
    """One text file of the bundle; what cannot be had is noted in README.txt instead."""
    try:
        text = await cluster.text(api_path)
    except PluginError as problem:
        bundle.problems.append(f"{path}: {problem}")
        return
    if text is None:
        bundle.problems.append(f"{path}: {missing} (404 from {api_path})")
    else:
        bundle.add_text(path, text)


def _without_managed_fields(obj: Obj) -> Obj:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


def _plain(renderable: Any) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=160, color_system=None).print(renderable)
    return buffer.getvalue()


def _readme(cluster: Cluster, namespace: str | None, bundle: Bundle) -> str:
    lines = [
        "Federator support bundle (kubectl federator report)",
        f"created:   {datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"plugin:    {__version__}",
        f"context:   {cluster.target.context}",
        f"server:    {cluster.target.connection.server}",
        f"namespace: {namespace or 'all namespaces'}",
        "",
        "Secret values, connection strings, keys, signatures, tokens and URI passwords are replaced by",
        "[REDACTED...] markers; Secrets appear with their keys only.",
        "",
        "Files:",
        *(f"  {path}" for path in sorted(bundle.files)),
    ]
    if bundle.problems:
        lines += ["", "Not collected:", *(f"  {p}" for p in bundle.problems)]
    return "\n".join(lines) + "\n"


def destination(out: str | None, now: datetime | None = None) -> Path | None:
    """Where the zip goes (None: standard output), checked before anything is collected: a missing
    directory is an error, never created."""
    name = f"federator-report-{(now or datetime.now(UTC)).strftime('%Y%m%dT%H%M%SZ')}.zip"
    if out == "-":
        if sys.stdout.isatty():
            raise PluginError("-o - writes a zip archive to standard output: redirect it to a file or a pipe")
        return None
    path = Path(out) if out else Path(name)
    if path.is_dir():
        path = path / name
    if not path.parent.is_dir():
        raise PluginError(f"cannot write {path}: the directory {path.parent} does not exist")
    return path


def _write(path: Path | None, bundle: Bundle) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in sorted(bundle.files.items()):
            archive.writestr(name, text)
    if path is None:
        sys.stdout.buffer.write(buffer.getvalue())
        sys.stdout.flush()
        return
    # Written beside, then renamed: a reader never sees half a bundle, and a failure leaves nothing.
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_bytes(buffer.getvalue())
        partial.replace(path)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise PluginError(f"cannot write {path}: {err.strerror or err}") from None
