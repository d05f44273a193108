"""Planning a local run (pure): manifests → the emulator to start, the task configs to run, and what
cannot run with its Stalled reason. Uses the operator's own validation and planning code.

Kinds reach the runner through `LOCAL_KINDS`: each expands a manifest into the ReplicationTask manifests
it runs (a ReplicationTask is itself). A ServiceBusMirror will expand into the tasks `plan_mirror`
generates, once its Service Bus provisioning can be applied to the emulator (see docs/local-mode.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federator import reasons
from federator.api.replicationtask import ReplicationTaskSpec
from federator.local.emulator import EmulatorLayout, emulator_namespaces, endpoint_uses
from federator.local.references import SupportingDocuments, Unresolved
from federator.local.state import StateDir
from federator.planning.errors import PlanningError
from federator.planning.task import TASK_CONFIG_KEY, plan_replication_task
from federator.settings import OperatorSettings
from federator.validation import validate_object
from federator.validation.documents import Document
from federator_emulator.config import EmulatorConfig

Expand = Callable[[Document], list[dict[str, Any]]]

LOCAL_KINDS: dict[str, Expand] = {"ReplicationTask": lambda doc: [doc.body]}
"""Kind → the ReplicationTask manifests it runs locally."""

NOT_YET_LOCAL = {
    "ServiceBusMirror": "its Service Bus provisioning and the Service Bus source are not wired to the "
    "emulator yet; `federator render` shows what it would create",
    "FailoverGroup": "failover groups are not built yet (issue #6)",
}

# Documents local mode reads for what they hold rather than runs.
SUPPORTING_KINDS = {("v1", "Secret"), ("v1", "ConfigMap")}


@dataclass(frozen=True)
class TaskRun:
    """A task that can run: its config file content and what its process needs."""

    namespace: str
    name: str
    label: str
    task_config: dict[str, Any]
    """Written to the state dir once the emulator's connection strings are known."""
    emulator_namespaces: tuple[str, ...]
    spark_conf: dict[str, str]
    files: dict[Path, bytes] = field(default_factory=dict, repr=False)
    """ConfigMap keys the editors read, written where ``task_config["configMapFiles"]`` says."""
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)
    """Secret values for the app's environment only (never written to a file)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class BlockedTask:
    """A task that cannot run, as Stalled: reason and what to do."""

    namespace: str
    name: str
    label: str
    reason: str
    message: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Note:
    """A document that is not run, and why; ``failed`` counts against the exit code."""

    label: str
    message: str
    failed: bool


@dataclass
class LocalPlan:
    tasks: list[TaskRun] = field(default_factory=list)
    blocked: list[BlockedTask] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    emulator: EmulatorConfig | None = None
    """The emulator to start (ports still 0 unless declared); None when nothing uses it."""

    @property
    def failed(self) -> bool:
        return bool(self.blocked) or any(n.failed for n in self.notes)


def plan_local_run(
    documents: Iterable[Document],
    *,
    state: StateDir,
    environ: Mapping[str, str],
    emulator_config: EmulatorConfig | None = None,
    metrics_port: int | None = None,
) -> LocalPlan:
    """Everything a run needs, before any process starts. ``metrics_port``: the first task's Prometheus
    port (each further task the next one); None leaves the endpoints off."""
    documents = list(documents)
    settings = OperatorSettings()  # the cluster-only settings (images, volumes) do not matter here
    supporting = SupportingDocuments.collect(d.body for d in documents)
    layout = EmulatorLayout(emulator_config)
    plan = LocalPlan()
    seen: set[str] = set()
    for doc in documents:
        for body, label in _expand(doc, plan):
            meta = body.get("metadata") or {}
            namespace, name = meta.get("namespace") or "default", meta["name"]
            if f"{namespace}/{name}" in seen:
                plan.blocked.append(
                    BlockedTask(
                        namespace,
                        name,
                        label,
                        reasons.INVALID_SPEC,
                        f"ReplicationTask {namespace}/{name} is defined twice; the first definition runs",
                    )
                )
                continue
            seen.add(f"{namespace}/{name}")
            port = None if metrics_port is None else metrics_port + len(plan.tasks)
            outcome = _plan_task(body, label, state, environ, supporting, layout, settings, port)
            if isinstance(outcome, TaskRun):
                plan.tasks.append(outcome)
            else:
                plan.blocked.append(outcome)
    if not layout.empty:
        plan.emulator = layout.config()
    return plan


def _expand(doc: Document, plan: LocalPlan) -> list[tuple[dict[str, Any], str]]:
    """The ReplicationTask manifests a document runs; other outcomes are recorded on ``plan``."""
    kind, problems = validate_object(doc.body)
    if kind is None and not problems:
        body = doc.body if isinstance(doc.body, dict) else {}
        if (body.get("apiVersion"), body.get("kind")) not in SUPPORTING_KINDS:
            plan.notes.append(Note(doc.label, "skipped: not a federator.io resource", failed=False))
        return []
    if problems:
        meta = doc.body.get("metadata") if isinstance(doc.body, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        message = "; ".join(str(p) for p in problems)
        if kind is not None and kind.kind == "ReplicationTask" and isinstance(meta.get("name"), str):
            plan.blocked.append(
                BlockedTask(
                    meta.get("namespace") or "default", meta["name"], doc.label, reasons.INVALID_SPEC, message
                )
            )
        else:
            plan.notes.append(Note(doc.label, f"{reasons.INVALID_SPEC}: {message}", failed=True))
        return []
    assert kind is not None
    expand = LOCAL_KINDS.get(kind.kind)
    if expand is None:
        why = NOT_YET_LOCAL.get(kind.kind, "no local reconciler")
        plan.notes.append(
            Note(doc.label, f"{kind.kind} is not supported in local mode yet: {why}", failed=True)
        )
        return []
    return [(body, doc.label) for body in expand(doc)]


def _plan_task(
    body: dict[str, Any],
    label: str,
    state: StateDir,
    environ: Mapping[str, str],
    supporting: SupportingDocuments,
    layout: EmulatorLayout,
    settings: OperatorSettings,
    metrics_port: int | None,
) -> TaskRun | BlockedTask:
    meta = body["metadata"]
    namespace, name = meta.get("namespace") or "default", meta["name"]

    def blocked(reason: str, message: str) -> BlockedTask:
        return BlockedTask(namespace, name, label, reason, message)

    spec = ReplicationTaskSpec.model_validate(body["spec"])
    uses = endpoint_uses(spec)
    following = [u.path for u in uses if u.connection.failover_group_ref is not None]
    if following:
        return blocked(
            reasons.FAILOVER_GROUP_FOLLOWING_NOT_AVAILABLE,
            f"{', '.join(following)} follows a FailoverGroup; following a failover is not available yet",
        )
    try:
        task = plan_replication_task(
            name=name,
            namespace=namespace,
            spec=spec,
            settings=settings,
            generation=meta.get("generation"),
            local=True,
        )
    except PlanningError as err:
        return blocked(err.reason, err.message)
    secret_env = supporting.secrets(namespace, task.spark_app.secrets, environ)
    if isinstance(secret_env, Unresolved):
        return blocked(secret_env.reason, secret_env.message)
    contents = supporting.config_map_files(namespace, task.spark_app.config_map_files)
    if isinstance(contents, Unresolved):
        return blocked(contents.reason, contents.message)
    conflicts = layout.conflicts(uses)
    if conflicts:
        return blocked(reasons.EMULATOR_ENTITY_CONFLICT, "; ".join(conflicts))
    layout.add(uses)
    files = {
        f.ref: state.config_map_file(namespace, name, f.config_map, f.key)
        for f in task.spark_app.config_map_files
    }
    config: dict[str, Any] = json.loads(task.config_map["data"][TASK_CONFIG_KEY])
    config["checkpointLocation"] = f"file://{state.checkpoint(namespace, name).resolve()}"
    config["statusFile"] = str(state.status_file(namespace, name).resolve())
    config["configMapFiles"] = {ref: str(path.resolve()) for ref, path in files.items()}
    config["metricsPort"] = metrics_port  # None: no endpoint (several tasks would want the same port)
    return TaskRun(
        namespace=namespace,
        name=name,
        label=label,
        task_config=config,
        emulator_namespaces=tuple(emulator_namespaces(uses)),
        spark_conf=dict(task.spark_app.spark_conf),
        files={path: contents[ref] for ref, path in files.items()},
        secret_env=secret_env,
    )


def with_emulator_connections(task: TaskRun, connection_strings: Mapping[str, str]) -> dict[str, Any]:
    """The task config to write once the emulator runs: `emulatorConnections` for its namespaces."""
    return {
        **task.task_config,
        "emulatorConnections": {ns: connection_strings[ns] for ns in task.emulator_namespaces},
    }
