"""What a local plan is made of: tasks that run (or wait for a mirror or a failover group first), tasks
that cannot run, the mirrors to provision, the failover groups to probe, and notes about the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from federator.local.emulator import EmulatorLayout
from federator.local.references import LocalSecrets, SupportingDocuments, Unresolved
from federator.local.state import StateDir
from federator.planning.mirror import MirrorPlan
from federator.settings import OperatorSettings
from federator.validation.documents import Document
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.emulatorconfig import EmulatorConfig
from federator_contract.taskconfig import TaskConfig


@dataclass(frozen=True)
class TaskRun:
    """A task that can run: its config file content and what its process needs."""

    namespace: str
    name: str
    label: str
    task_config: TaskConfig
    """Written to the state dir once the emulator's connection strings are known."""
    emulator_namespaces: tuple[str, ...]
    spark_conf: dict[str, str]
    files: dict[Path, bytes] = field(default_factory=dict, repr=False)
    """ConfigMap keys the editors read, written where ``task_config.config_map_files`` says."""
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)
    """Secret values for the app's environment only (never written to a file)."""
    mirror: str | None = None
    """The mirror that generated the task (`namespace/name`): it starts once its pair is provisioned."""
    pair: tuple[str, ...] = ()
    """The mirror members the task copies between."""
    application: str | None = None
    """The ReplicationApplication (`namespace/name`) its `spec.runtime.applicationRef` names: its query
    runs in that application's host, with the application's Spark settings."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def followed_members(self) -> dict[str, str]:
        """Spec path → `group/member` of every connection that follows a FailoverGroup."""
        return self.task_config.followed_members


@dataclass(frozen=True)
class BlockedTask:
    """A task that cannot run, as Stalled (or Reconciling while it waits): reason and what to do."""

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


@dataclass(frozen=True)
class MirrorRun:
    """A ServiceBusMirror: its plan is provisioned on its members once the emulator runs, then its tasks
    start, each once both members of its pair are provisioned."""

    namespace: str
    name: str
    label: str
    spec: ServiceBusMirrorSpec
    plan: MirrorPlan
    secrets: LocalSecrets = field(repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class GroupRun:
    """A FailoverGroup: probed every `probe.periodSeconds` while the run lasts."""

    namespace: str
    name: str
    label: str
    spec: FailoverGroupSpec
    secrets: LocalSecrets = field(repr=False)
    source: str = ""
    """The manifest file: an edit of the group's spec there is picked up (local/groups.py)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


Replan = Callable[[Mapping[str, Mapping[str, Any] | None]], "TaskRun | BlockedTask"]


@dataclass(frozen=True)
class FollowingTask:
    """A task with connections that follow FailoverGroups: planned again with the members the groups
    publish (first when they have chosen, then after every switch)."""

    namespace: str
    name: str
    label: str
    groups: tuple[str, ...]
    replan: Replan = field(repr=False, compare=False)
    """Groups as the API would hold them (name → object with spec and status) → the task's run."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class LocalPlan:
    tasks: list[TaskRun] = field(default_factory=list)
    blocked: list[BlockedTask] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    mirrors: list[MirrorRun] = field(default_factory=list)
    groups: list[GroupRun] = field(default_factory=list)
    following: list[FollowingTask] = field(default_factory=list)
    emulator: EmulatorConfig | None = None
    """The emulator to start (ports still 0 unless declared); None when nothing uses it."""
    task_specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """`namespace/name` → every ReplicationTask's spec as written (what the groups' rounds read)."""
    applications: dict[str, ReplicationApplicationSpec] = field(default_factory=dict)
    """`namespace/name` → the ReplicationApplications among the manifest files (local/applications.py)."""
    azurite_tasks: set[str] = field(default_factory=set)
    """Tasks (`<namespace>/<name>`) whose checkpoint translation keeps a store in Azurite, which the run
    starts for them."""

    @property
    def failed(self) -> bool:
        return bool(self.blocked) or any(n.failed for n in self.notes)

    @property
    def runnable(self) -> bool:
        return bool(self.tasks or self.following or self.groups or self.mirrors)


@dataclass(frozen=True)
class TaskManifest:
    """A ReplicationTask manifest a document runs, and what it depends on."""

    body: dict[str, Any]
    mirror: str | None = None
    pair: tuple[str, ...] = ()
    provisioned: frozenset[tuple[str, str]] = frozenset()
    """Emulator entities the mirror creates at run time (`EmulatorLayout.add`)."""


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Controlled(Generic[M]):
    """A mirror or a failover group as its local controller needs it: names, spec, and its Secrets."""

    namespace: str
    name: str
    spec: M
    secrets: LocalSecrets = field(repr=False)


@dataclass
class PlanContext:
    """What expanding a document may read and add to."""

    plan: LocalPlan
    layout: EmulatorLayout
    supporting: SupportingDocuments
    environ: Mapping[str, str]
    state: StateDir
    settings: OperatorSettings

    def controlled(self, doc: Document, model: type[M]) -> Controlled[M] | None:
        """The document's spec and every Secret key it references; None, with the document noted as
        failed and why, when a key cannot be had."""
        meta = doc.body["metadata"]
        namespace = meta.get("namespace") or "default"
        spec = model.model_validate(doc.body["spec"])
        found = LocalSecrets.resolve(self.supporting, namespace, spec, self.environ)
        if isinstance(found, Unresolved):
            self.plan.notes.append(Note(doc.label, f"{found.reason}: {found.message}", failed=True))
            return None
        return Controlled(namespace, meta["name"], spec, found)
