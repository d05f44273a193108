"""Planning a local run (pure): manifests → the emulator to start, what runs in it, and what cannot run
with its Stalled reason. Uses the operator's own validation and planning code.

Kinds reach the runner through `LOCAL_KINDS`: each expands a manifest into the ReplicationTask manifests
it runs, and may register what else the run does for it. A ServiceBusMirror expands into the tasks
`plan_mirror` generates and registers its provisioning (local/mirrors.py); a FailoverGroup registers its
probe loop (local/groups.py). Tasks that follow a group are planned once per member the group may
publish (so that every member's entities exist and every variant is known to plan), and again at run
time with the member it does publish.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federator import reasons
from federator.local.applications import expand_application, is_application, membership
from federator.local.emulator import EmulatorLayout, emulator_namespaces, endpoint_uses
from federator.local.groups import expand_group, group_object
from federator.local.mirrors import expand_mirror
from federator.local.model import (
    BlockedTask,
    FollowingTask,
    GroupRun,
    LocalPlan,
    Note,
    PlanContext,
    TaskManifest,
    TaskRun,
)
from federator.local.references import SupportingDocuments, Unresolved
from federator.local.state import StateDir
from federator.planning.errors import PlanningError
from federator.planning.following import Following, followed_groups, resolve_following
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation import check_document
from federator.validation.documents import Document
from federator_contract.api.failovergroup import FailoverGroupStatus
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.emulatorconfig import EmulatorConfig
from federator_contract.taskconfig import TaskConfig

Expand = Callable[[Document, PlanContext], list[TaskManifest]]

LOCAL_KINDS: dict[str, Expand] = {
    "ReplicationApplication": expand_application,
    "ReplicationTask": lambda doc, _: [TaskManifest(doc.body)],
    "ServiceBusMirror": expand_mirror,
    "FailoverGroup": expand_group,
}
"""Kind → the ReplicationTask manifests it runs locally (and what it registers on the plan)."""

# Documents local mode reads for what they hold rather than runs.
SUPPORTING_KINDS = {("v1", "Secret"), ("v1", "ConfigMap")}


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
    # Applications first: a task may come before the application it names.
    documents = sorted(documents, key=lambda doc: not is_application(doc))
    settings = OperatorSettings()  # the cluster-only settings (images, volumes) do not matter here
    supporting = SupportingDocuments.collect(d.body for d in documents)
    context = PlanContext(LocalPlan(), EmulatorLayout(emulator_config), supporting, environ, state, settings)
    plan, layout = context.plan, context.layout
    planner = TaskPlanner(state, environ, supporting, settings, plan.applications)
    ports: Iterator[int | None] = (
        itertools.repeat(None) if metrics_port is None else itertools.count(metrics_port)
    )
    seen: set[str] = set()
    following: list[tuple[TaskManifest, str, ReplicationTaskSpec]] = []
    for doc in documents:
        for manifest in _expand(doc, context):
            meta = manifest.body.get("metadata") or {}
            namespace, name = meta.get("namespace") or "default", meta["name"]
            if f"{namespace}/{name}" in seen:
                message = f"ReplicationTask {namespace}/{name} is defined twice; the first definition runs"
                plan.blocked.append(BlockedTask(namespace, name, doc.label, reasons.INVALID_SPEC, message))
                continue
            seen.add(f"{namespace}/{name}")
            plan.task_specs[f"{namespace}/{name}"] = manifest.body["spec"]
            spec = ReplicationTaskSpec.model_validate(manifest.body["spec"])
            if needs_azurite(spec):
                plan.azurite_tasks.add(f"{namespace}/{name}")
            if followed_groups(spec):
                following.append((manifest, doc.label, spec))  # once every group is known
                continue
            outcome = planner.plan(manifest, doc.label, layout, next(ports))
            if isinstance(outcome, TaskRun):
                plan.tasks.append(outcome)
            else:
                plan.blocked.append(outcome)
    for manifest, label, spec in following:
        found = _plan_following(manifest, label, spec, plan.groups, planner, layout, next(ports))
        if isinstance(found, FollowingTask):
            plan.following.append(found)
        else:
            plan.blocked.append(found)
    if not layout.empty:
        plan.emulator = layout.config()
    return plan


def _expand(doc: Document, context: PlanContext) -> list[TaskManifest]:
    """The ReplicationTask manifests a document runs; other outcomes are recorded on the plan."""
    plan = context.plan
    verdict = check_document(doc)
    kind, problems = verdict.kind, verdict.problems
    if not verdict.ours:
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
    assert kind is not None and verdict.admitted is not None
    expand = LOCAL_KINDS.get(kind.kind)
    if expand is None:
        plan.notes.append(Note(doc.label, f"{kind.kind} has no local reconciler", failed=True))
        return []
    return expand(dataclasses.replace(doc, body=verdict.admitted), context)


@dataclass(frozen=True)
class TaskPlanner:
    """One ReplicationTask manifest → its run, or why it cannot run."""

    state: StateDir
    environ: Mapping[str, str]
    supporting: SupportingDocuments
    settings: OperatorSettings
    applications: Mapping[str, ReplicationApplicationSpec]
    """`namespace/name` → the ReplicationApplications among the manifest files."""

    def plan(
        self,
        manifest: TaskManifest,
        label: str,
        layout: EmulatorLayout | None,
        metrics_port: int | None,
        following: Following | None = None,
    ) -> TaskRun | BlockedTask:
        """``layout``: where the task's emulator entities are added (None at run time, when the emulator
        already runs); ``following``: the members of the groups it follows, resolved."""
        meta = manifest.body["metadata"]
        namespace, name = meta.get("namespace") or "default", meta["name"]

        def blocked(reason: str, message: str) -> BlockedTask:
            return BlockedTask(namespace, name, label, reason, message)

        spec = following.spec if following else ReplicationTaskSpec.model_validate(manifest.body["spec"])
        uses = endpoint_uses(spec)
        try:
            task = plan_replication_task(
                name=name,
                namespace=namespace,
                spec=spec,
                settings=self.settings,
                generation=meta.get("generation"),
                local=True,
                following=following,
                annotations=meta.get("annotations"),
            )
            member = membership(spec, namespace, self.applications)
        except PlanningError as err:
            return blocked(err.reason, err.message)
        secret_env = self.supporting.secrets(namespace, task.spark_app.secrets, self.environ)
        if isinstance(secret_env, Unresolved):
            return blocked(secret_env.reason, secret_env.message)
        contents = self.supporting.config_map_files(namespace, task.spark_app.config_map_files)
        if isinstance(contents, Unresolved):
            return blocked(contents.reason, contents.message)
        if layout is not None:
            conflicts = layout.conflicts(uses)
            if conflicts:
                return blocked(reasons.EMULATOR_ENTITY_CONFLICT, "; ".join(conflicts))
            layout.add(uses, manifest.provisioned)
        state = self.state
        files = {
            f.ref: state.config_map_file(namespace, name, f.config_map, f.key)
            for f in task.spark_app.config_map_files
        }
        config = task.task_config.model_copy(
            update={
                # One location, whichever member a following source reads: the app keeps each member's
                # positions under it, and what it handled, to resume after a switch.
                "checkpoint_location": f"file://{state.checkpoint(namespace, name).resolve()}",
                "status_file": str(state.status_file(namespace, name).resolve()),
                "config_map_files": {ref: str(path.resolve()) for ref, path in files.items()},
                "metrics_port": metrics_port,  # None: no endpoint (several tasks would want one port)
            }
        )
        return TaskRun(
            namespace=namespace,
            name=name,
            label=label,
            task_config=config,
            emulator_namespaces=tuple(emulator_namespaces(uses)),
            spark_conf=member.spark_conf if member else dict(task.spark_app.spark_conf),
            files={path: contents[ref] for ref, path in files.items()},
            secret_env=secret_env,
            mirror=manifest.mirror,
            pair=manifest.pair,
            application=member.application if member else None,
        )


def _plan_following(
    manifest: TaskManifest,
    label: str,
    spec: ReplicationTaskSpec,
    groups: list[GroupRun],
    planner: TaskPlanner,
    layout: EmulatorLayout,
    metrics_port: int | None,
) -> FollowingTask | BlockedTask:
    meta = manifest.body["metadata"]
    namespace, name = meta.get("namespace") or "default", meta["name"]
    known = {g.name: g for g in groups if g.namespace == namespace}
    names = followed_groups(spec)
    for group in names:
        if group not in known:
            return BlockedTask(
                namespace,
                name,
                label,
                reasons.FAILOVER_GROUP_NOT_FOUND,
                f"the task follows FailoverGroup {namespace}/{group}, which is not among the manifest files: "
                "run the group's manifest with the task",
            )
    followed = [known[g] for g in names]
    # Every member a group may publish: its entities are laid out now, and each variant must plan.
    for variant in _variants(followed):
        try:
            resolved = resolve_following(spec, variant)
        except PlanningError as err:
            return BlockedTask(namespace, name, label, err.reason, err.message)
        outcome = planner.plan(manifest, label, layout, metrics_port, resolved)
        if isinstance(outcome, BlockedTask):
            return outcome

    def replan(objects: Mapping[str, Mapping[str, Any] | None]) -> TaskRun | BlockedTask:
        try:
            resolved = resolve_following(spec, objects)
        except PlanningError as err:
            return BlockedTask(namespace, name, label, err.reason, err.message)
        return planner.plan(manifest, label, None, metrics_port, resolved)

    return FollowingTask(namespace, name, label, tuple(names), replan)


def _variants(groups: list[GroupRun]) -> Iterator[dict[str, Mapping[str, Any] | None]]:
    """Each group at each of its members, the others at their first member."""

    def at(group: GroupRun, member: str) -> dict[str, Any]:
        return group_object(group, FailoverGroupStatus(producer_member=member, consumer_member=member))

    start = {g.name: at(g, g.spec.members[0].name) for g in groups}
    for group in groups:
        for member in group.spec.members:
            yield {**start, group.name: at(group, member.name)}


def with_emulator_connections(
    task: TaskRun, connection_files: Mapping[str, Path], blob_connection_file: Path | None = None
) -> TaskConfig:
    """The task config to write once the emulator runs: `emulatorConnectionFiles` for its namespaces, and
    the file of Azurite's connection string when a checkpoint store is there (the files hold the
    connection strings, so no key lands in `task.json`)."""
    files = {ns: str(connection_files[ns].resolve()) for ns in task.emulator_namespaces}
    update: dict[str, object] = {"emulator_connection_files": files}
    if needs_azurite(task.task_config.spec) and blob_connection_file is not None:
        update["emulator_blob_connection_file"] = str(blob_connection_file.resolve())
    return task.task_config.model_copy(update=update)


def needs_azurite(spec: ReplicationTaskSpec) -> bool:
    """Whether a checkpoint store of the task's translation is Azurite (`emulator: {}`)."""
    translation = spec.checkpoint_translation
    if translation is None:
        return False
    stores = [translation.checkpoint_store, translation.target_checkpoint_store]
    return any(store is not None and store.connection.emulator is not None for store in stores)
