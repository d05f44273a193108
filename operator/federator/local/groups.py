"""FailoverGroup in local mode: the operator's round (reconcile/failovergroup.py) run every
`probe.periodSeconds` with local adapters. Instead of a ConfigMap, what the group publishes is written to
`<state>/groups/<namespace>/<name>/endpoints.json` (the ConfigMap's keys), with its status and Events beside
it; Secrets come from the environment or the manifests' Secret documents; DNS records are written only to a
zone the emulator serves (`dnsZones` of `--emulator-config`); local mode never writes to Azure DNS. The
group's state is kept across runs, as a cluster keeps it in status, and an edit of its manifest file is
picked up as a cluster picks up `kubectl apply`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from federator import reasons
from federator.failover.dns import DnsPublisher
from federator.failover.probes import Prober
from federator.failover.state import GroupState
from federator.local.emulator import group_uses
from federator.local.model import GroupRun, PlanContext, TaskManifest
from federator.local.model import Note as PlanNote
from federator.local.observe import TaskRow, triad_row
from federator.local.state import StateDir
from federator.local.taskobjects import TaskObjects
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError
from federator.reconcile.failovergroup import GroupPorts, group_round
from federator.status.conditions import ConditionUpdate, apply_conditions, timestamp
from federator.status.events import Note
from federator.validation import check_object
from federator.validation.credential_scope import CredentialScope
from federator.validation.documents import Document, ManifestError, load_documents
from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverGroupStatus
from federator_contract.files import write_atomically

# Local mode signs in as the developer and reaches its emulators: no credential is refused.
LOCAL_SCOPE = CredentialScope(local=True)


def expand_group(doc: Document, context: PlanContext) -> list[TaskManifest]:
    """A group runs no task itself: it is registered, and what its probes read is laid out."""
    group = context.controlled(doc, FailoverGroupSpec)
    if group is None:
        return []
    uses = group_uses(group.spec)
    conflicts = context.layout.conflicts(uses)
    if conflicts:
        context.plan.notes.append(PlanNote(doc.label, "; ".join(conflicts), failed=True))
        return []
    context.layout.add(uses)
    run = GroupRun(group.namespace, group.name, doc.label, group.spec, group.secrets, doc.source)
    context.plan.groups.append(run)
    return []


def group_object(run: GroupRun, status: FailoverGroupStatus) -> dict[str, Any]:
    """The group as the API would hold it (what `resolve_following` reads)."""
    return {
        "metadata": {"name": run.name, "namespace": run.namespace},
        "spec": run.spec.model_dump(by_alias=True, mode="json", exclude_none=True),
        "status": _document(status),
    }


@dataclass(frozen=True)
class GroupSnapshot:
    """A group after a round: what following tasks and the live view read."""

    state: GroupState
    updates: list[ConditionUpdate]
    dns: str
    last_event: str = ""
    version: int = 0
    """Counts changes of the published members (following tasks are planned again when it moves)."""


@dataclass(frozen=True)
class EndpointsFile:
    """Where local mode publishes a group's endpoints: the ConfigMap's keys as JSON."""

    path: Path

    @property
    def description(self) -> str:
        return "endpoints file"

    async def publish(self, config_map: dict[str, Any]) -> str | None:
        text = json.dumps(config_map["data"], indent=2, sort_keys=True)
        try:
            before: str | None = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            before = None
        if before == text:
            return None
        write_atomically(self.path, text)
        return None if before is None else f"endpoints file {self.path}"


@dataclass
class GroupLoop:
    """One group's rounds; the state is kept between them, and in the state dir between runs."""

    run: GroupRun
    state_dir: StateDir
    emulators: Mapping[str, str]
    """Emulator namespace → AMQP connection string."""
    prober: Prober
    dns_env: ManagementEnvironment | None
    """The emulator's management environment when it serves the group's DNS zone."""
    tasks: TaskObjects | None = None
    """The run's ReplicationTasks with their status (local/taskobjects.py): followers and lag."""
    snapshot: GroupSnapshot | None = None
    _ports: GroupPorts = field(init=False, repr=False)
    _modified: int | None = field(default=None, init=False, repr=False)
    _conditions: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)
    """The conditions last written (their transition times move only with their status)."""

    def __post_init__(self) -> None:
        self.snapshot = GroupSnapshot(self._load(), [], "")
        dns = DnsPublisher(self.dns_env) if self.dns_env is not None else None
        endpoints = EndpointsFile(self.directory / "endpoints.json")
        self._ports = GroupPorts(
            self.run.secrets, self.prober, endpoints, dns, LOCAL_SCOPE, self.emulators, tasks=self.tasks
        )
        self._modified = _modified(self.run.source)

    @property
    def directory(self) -> Path:
        return self.state_dir.group_dir(self.run.namespace, self.run.name)

    @property
    def period(self) -> float:
        return float(self.run.spec.probe.period_seconds)

    async def round(self) -> GroupSnapshot:
        """The operator's round; returns (and keeps) the new snapshot."""
        assert self.snapshot is not None
        now = datetime.now(UTC)
        reloaded = self._reload()
        run, before = self.run, self.snapshot
        found = await group_round(
            self._ports,
            name=run.name,
            namespace=run.namespace,
            uid=None,
            spec=run.spec,
            state=before.state,
            now=now,
        )
        updates = found.findings.condition_updates
        if found.state is None:  # a member's connection cannot be had: nothing was probed or published
            self.snapshot = dataclasses.replace(before, updates=updates, dns="")
            return self.snapshot
        state, notes = found.state, [*reloaded, *found.findings.notes]
        self._record(state, updates, notes, now)
        last = f"{notes[-1].reason}: {notes[-1].message}" if notes else before.last_event
        moved = (state.producer, state.consumer) != (before.state.producer, before.state.consumer)
        self.snapshot = GroupSnapshot(
            state, updates, self._dns(found.dns_error), last, before.version + moved
        )
        return self.snapshot

    def _dns(self, error: ManagementError | None) -> str:
        """What the view says about DNS."""
        dns = self.run.spec.publishing.dns
        if dns is None:
            return "no DNS publishing"
        if self._ports.dns is None:
            return (
                f"DNS skipped: zone {dns.zone.zone_name} is not served by the emulator (declare it under "
                "dnsZones in --emulator-config; local mode never writes to Azure DNS)"
            )
        if error is not None:
            return "DNS not published"
        return f"DNS records in the emulator's zone {dns.zone.zone_name}"

    def _record(
        self, state: GroupState, updates: list[ConditionUpdate], notes: list[Note], now: datetime
    ) -> None:
        """Status and Events, as a cluster keeps them on the object."""
        self._conditions = apply_conditions(self._conditions, updates, None, now)
        status = {**_document(state.to_status()), "conditions": self._conditions}
        write_atomically(self.directory / "status.json", json.dumps(status, indent=2))
        if notes:
            with (self.directory / "events.log").open("a", encoding="utf-8") as log:
                for note in notes:
                    log.write(f"{timestamp(now)} {note.type} {note.reason}: {note.message}\n")

    def failed_round(self, err: Exception) -> None:
        """A round that raised (a bug, a full disk): said in the view; the next round tries again."""
        assert self.snapshot is not None
        self.snapshot = dataclasses.replace(self.snapshot, last_event=f"the last round failed: {err!r}")

    def _reload(self) -> list[Note]:
        """The group's spec again when its manifest file changed (the local `kubectl apply`): a change of
        `activeMember` switches, as in a cluster. Members cannot change while the run lasts (their
        emulator entities and connections are set up at the start)."""
        modified = _modified(self.run.source)
        if modified is None or modified == self._modified:
            return []
        self._modified = modified
        run, where = self.run, f"{self.run.source}: FailoverGroup {self.run.key}"
        try:
            bodies = [d.body for d in load_documents(Path(run.source))]
        except ManifestError as err:
            return [Note("Warning", reasons.SPEC_NOT_RELOADED, str(err))]
        body = next((b for b in bodies if _names(b, run.namespace, run.name)), None)
        if body is None:
            return [
                Note(
                    "Warning",
                    reasons.SPEC_NOT_RELOADED,
                    f"{where} is no longer in the file; it keeps running",
                )
            ]
        verdict = check_object(body)
        if verdict.admitted is None:
            message = f"{where}: " + "; ".join(str(p) for p in verdict.problems)
            return [Note("Warning", reasons.SPEC_NOT_RELOADED, message)]
        spec = FailoverGroupSpec.model_validate(verdict.admitted["spec"])
        if _members(spec) != _members(run.spec):
            message = f"{where}: members changed; stop and start the run to use them"
            return [Note("Warning", reasons.SPEC_NOT_RELOADED, message)]
        if spec == run.spec:
            return []
        self.run = dataclasses.replace(run, spec=spec)
        return [
            Note("Normal", reasons.SPEC_RELOADED, f"{where} changed; the new spec applies from this round")
        ]

    def _load(self) -> GroupState:
        try:
            status = json.loads((self.directory / "status.json").read_text(encoding="utf-8"))
            # Conditions are not carried over: a file of an earlier version wrote them without times.
            return GroupState.from_status(FailoverGroupStatus.model_validate({**status, "conditions": []}))
        except (FileNotFoundError, ValueError):  # ValidationError is a ValueError: start afresh
            return GroupState()

    def object(self) -> dict[str, Any] | None:
        """The group as following tasks read it; None until its first round chose members."""
        snapshot = self.snapshot
        if snapshot is None or snapshot.state.phase is None:
            return None
        return group_object(self.run, snapshot.state.to_status())


def group_row(loop: GroupLoop) -> TaskRow:
    snapshot, run = loop.snapshot, loop.run
    key = f"group {run.key}"
    assert snapshot is not None
    if not snapshot.updates:
        return TaskRow(key, "Reconciling", reasons.FAILOVER_GROUP_PENDING, "first probe round running")
    state = snapshot.state
    probes = ", ".join(
        f"{h.member} {'ok' if h.healthy else f'failed {h.consecutive_failures}x'}"
        for h in state.health.values()
    )
    info = (
        f"phase {state.phase}: producers → {state.producer}, consumers → {state.consumer}; probes: {probes}; "
        f"endpoints: {loop.directory / 'endpoints.json'}; {snapshot.dns}"
        + (f"; last event {snapshot.last_event}" if snapshot.last_event else "")
    )
    return triad_row(key, snapshot.updates, info=info)


def _document(status: FailoverGroupStatus) -> dict[str, Any]:
    """The status as the API would hold it (no nulls: a merge patch removes those)."""
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)


def _modified(path: str) -> int | None:
    try:
        return Path(path).stat().st_mtime_ns if path else None
    except OSError:
        return None


def _names(body: Any, namespace: str, name: str) -> bool:
    if not isinstance(body, dict) or body.get("kind") != "FailoverGroup":
        return False
    meta = body.get("metadata") or {}
    return bool((meta.get("namespace") or "default") == namespace and meta.get("name") == name)


def _members(spec: FailoverGroupSpec) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in spec.members]
