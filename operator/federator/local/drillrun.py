"""`federator drill -f FILES [--kill]`: a failover drill of a FailoverGroup in local mode. The manifests
run as `federator run` would (a copy of them, under `<state>/drill/`), and once the group is healthy
enough the drill switches it to another member and back, as planned requests (a new `switchRequest`
in the copy, picked up at the group's next round); with `--kill` it then takes the primary's emulator
namespace down (docs/emulator.md#outages), waits for the probes to fail the group over, brings the
primary back and fails back. For each switch it prints what the group recorded (`status.switches[]`):
each phase's time, the followers' time to flow, and what was left behind (events, RPO)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from federator.failover.confirmation import loss_words
from federator.local.drill import GroupFiles, detection_goal, wait_until
from federator.local.outage import set_outage
from federator.local.state import StateDir
from federator.local.taskobjects import task_status
from federator.validation import check_object
from federator.validation.documents import ManifestError, load_documents
from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverGroupStatus, SwitchRecord
from federator_contract.api.replicationtask import ReplicationTaskStatus

START_SECONDS = 300.0  # a Spark JVM on a busy 2-core machine
SWITCH_SECONDS = 120.0
CONFIRM_SECONDS = 60.0  # a task's driver measures a source that is back within a second


class DrillRefused(Exception):
    """The drill does not start, or stops before switching: the reason says why."""


@dataclass(frozen=True)
class DrillGroup:
    """The FailoverGroup a drill switches, and the file it is in."""

    path: Path
    namespace: str
    name: str
    spec: FailoverGroupSpec
    followers: tuple[str, ...] = ()
    """The ReplicationTasks in the files whose source follows the group (in its namespace)."""


def find_group(files: Sequence[Path], name: str | None, kill: bool) -> DrillGroup:
    """The group to drill: the only one in the files, or the one named; refused when it cannot be
    drilled as asked."""
    groups = [g for path in files for g in _groups(path)]
    if not groups:
        raise DrillRefused("no FailoverGroup in the files: a drill switches one")
    chosen = [g for g in groups if name is None or g.name == name]
    names = ", ".join(sorted(g.name for g in groups))
    if not chosen:
        raise DrillRefused(f"no FailoverGroup named {name} in the files (they have {names})")
    if len(chosen) > 1:
        raise DrillRefused(f"several FailoverGroups ({names}): name one with --group")
    group = chosen[0]
    if kill:
        _check_killable(group)
    followers = [f for path in files for f in _followers(path, group.namespace, group.name)]
    return dataclasses.replace(group, followers=tuple(followers))


def _bodies(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The file's documents (label, body)."""
    try:
        documents = list(load_documents(path))
    except ManifestError as err:
        raise DrillRefused(str(err)) from None
    return [(doc.label, doc.body if isinstance(doc.body, dict) else {}) for doc in documents]


def _followers(path: Path, namespace: str, group: str) -> list[str]:
    """The ReplicationTasks of the file whose source follows FailoverGroup ``namespace/group``."""
    found = []
    for _, body in _bodies(path):
        meta = body.get("metadata") or {}
        if body.get("kind") != "ReplicationTask" or (meta.get("namespace") or "default") != namespace:
            continue
        sources = ((body.get("spec") or {}).get("source") or {}).values()
        connections = [s.get("connection") or {} for s in sources if isinstance(s, dict)]
        refs = [c.get("failoverGroupRef") or {} for c in connections if isinstance(c, dict)]
        if any(ref.get("name") == group for ref in refs):
            found.append(str(meta.get("name")))
    return found


def _groups(path: Path) -> list[DrillGroup]:
    found = []
    for label, body in _bodies(path):
        if body.get("kind") != "FailoverGroup":
            continue
        verdict = check_object(body)
        if verdict.admitted is None:
            problems = "; ".join(str(p) for p in verdict.problems)
            raise DrillRefused(f"{label}: the FailoverGroup is not valid: {problems}")
        meta = verdict.admitted["metadata"]
        spec = FailoverGroupSpec.model_validate(verdict.admitted["spec"])
        found.append(DrillGroup(path, meta.get("namespace") or "default", meta["name"], spec))
    return found


def _check_killable(group: DrillGroup) -> None:
    spec = group.spec
    if spec.mode != "automatic":
        raise DrillRefused(
            f"--kill needs spec.mode: automatic on FailoverGroup {group.name} (a manual group never fails "
            "over by itself: its probes would only report the primary unhealthy)"
        )
    index, primary = next((i, m) for i, m in enumerate(spec.members) if m.name == spec.primary_member)
    if primary.connection.emulator is None:
        raise DrillRefused(
            f"--kill takes the primary's emulator namespace down, and member {primary.name} is not in the "
            f"emulator (spec.members[{index}].connection.emulator)"
        )


def not_ready(status: FailoverGroupStatus | None, spec: FailoverGroupSpec) -> str | None:
    """Why the group is not healthy enough to be drilled (None: it is): it must be Ready on its primary,
    producers and consumers together, and every member must answer its probes."""
    if status is None or status.phase is None:
        return "the group has not chosen its members yet"
    ready = next((c for c in status.conditions if c.type == "Ready"), None)
    if ready is None or ready.status != "True":
        why = f"{ready.reason}: {ready.message}" if ready is not None else "no Ready condition yet"
        return f"the group is not Ready ({why})"
    producer, consumer = status.producer_member, status.consumer_member
    if producer != consumer:
        return f"producers use {producer} and consumers {consumer}: a failback is under way"
    if producer != spec.primary_member:
        return f"the group is on {producer}, not on its primary {spec.primary_member}: fail back first"
    for probe in status.probes:
        if not probe.healthy:
            return f"member {probe.member} fails its probes ({probe.message})"
    return None


def describe(record: SwitchRecord, killed: float | None = None) -> str:
    """A switch record (`status.switches[]`) in one line: phases, followers, what it left behind."""
    text = f"{record.source} → {record.target} ({record.cause})"
    if killed is not None:
        text += f": killed → decided {record.decided.timestamp() - killed:.1f}s"
    else:
        text += f": detected → decided {record.decided_seconds:.1f}s"
    published = record.published_seconds
    text += f", endpoints published {published:.1f}s later" if published is not None else ", not published"
    for follower in record.followers:
        seconds = follower.flowing_seconds
        flowing = f"after {seconds:.1f}s" if seconds is not None else "not yet"
        text += f"; {follower.task} flowing {flowing}"
    left = loss_words(record) or "left behind: unknown (no task copies between the members)"
    text += f"; {left}"
    return text + "; duplicates: not measured (a drill sends no traffic: bench/failover.py does)"


STOP_SECONDS = 60.0  # `federator run` stops its Spark applications gracefully on Ctrl-C


class RunProcess:
    """`federator run` of the manifests in a session of its own (a Ctrl-C to the session stops it and its
    children as a terminal would), its output in ``log``."""

    def __init__(self, manifests: Sequence[Path], state: Path, log: Path) -> None:
        self.manifests, self.state, self.log = list(manifests), state, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        files = [arg for manifest in self.manifests for arg in ("-f", str(manifest))]
        command = [sys.executable, "-c", "from federator.cli.main import app; app()", "run", *files]
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                [*command, "--state-dir", str(self.state)],
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class Drill:
    """One drill's steps on a running copy of the manifests: each request is a new `switchRequest` for a
    member in the copy, as a GitOps commit would make it."""

    def __init__(self, group: DrillGroup, copy: Path, run: RunProcess, say: Callable[[str], None]) -> None:
        self.group, self.copy, self.run, self.say = group, copy, run, say
        self.files = GroupFiles(StateDir(run.state), group.namespace, group.name)
        self.requests = 0

    def wait(self, check: Callable[[], Any], what: str, timeout: float = SWITCH_SECONDS) -> Any:
        """``check()``'s first true value; DrillRefused when the run ended meanwhile."""

        def checked() -> Any:
            process = self.run.process
            if process is not None and process.poll() is not None:
                raise DrillRefused(
                    f"`federator run` ended (exit code {process.returncode}): see {self.run.log}"
                )
            return check()

        return wait_until(checked, what, timeout)

    def ready(self) -> None:
        """Waits until the group chose its members, its followers flow on the primary (their Spark
        applications started: a switch is timed from a running follower) and it is healthy enough; refused
        with the reason when the followers do not start in time or the group does not become healthy within
        three probe periods."""
        self.wait(
            lambda: (status := self.files.status()) and status.phase,
            "the group chose no members",
            START_SECONDS,
        )
        self._followers_flowing()
        period = self.group.spec.probe.period_seconds
        try:
            self.wait(lambda: not_ready(self.files.status(), self.group.spec) is None, "", 3 * period + 1)
        except TimeoutError:
            raise DrillRefused(str(not_ready(self.files.status(), self.group.spec))) from None

    def _followers_flowing(self) -> None:
        """Waits until every follower's source reads the primary; refused with their logs if they do not."""
        primary, state, namespace = (
            self.group.spec.primary_member,
            StateDir(self.run.state),
            self.group.namespace,
        )
        waiting = list(self.group.followers)

        def all_flowing() -> bool:
            waiting[:] = [task for task in waiting if flowing_on(state, namespace, task) != primary]
            return not waiting

        try:
            self.wait(all_flowing, "", START_SECONDS)
        except TimeoutError:
            logs = ", ".join(str(state.app_log(namespace, task)) for task in waiting)
            raise DrillRefused(
                f"not flowing on member {primary} {START_SECONDS:.0f}s after the start: {', '.join(waiting)} "
                f"(see {logs})"
            ) from None

    def request(self, member: str) -> list[SwitchRecord]:
        """A planned request for ``member``; the group's records of the switch once they are complete."""
        after = time.time()
        self.requests += 1
        self._write_request(member, f"drill-{int(after)}-{self.requests}")
        return self._recorded(member, after)

    def kill(self, primary: str, namespace: str) -> tuple[list[SwitchRecord], float]:
        """Takes the primary's emulator namespace down; the records of the failover the probes make."""
        killed = time.time()
        set_outage(StateDir(self.run.state), namespace, True)
        self.say(f"killed emulator namespace {namespace} (member {primary})")
        limit = detection_goal(self.group.spec.probe) + SWITCH_SECONDS
        record: SwitchRecord = self.wait(
            lambda: self._failed_over(primary, killed), "the probes did not fail the group over", limit
        )
        return self._recorded(record.target, killed), killed

    def revive(self, namespace: str) -> None:
        """Brings the primary's namespace back and waits until its probes answer again."""
        set_outage(StateDir(self.run.state), namespace, False)
        primary = self.group.spec.primary_member
        self.wait(lambda: member_healthy(self.files.status(), primary), f"member {primary} did not come back")

    def confirmed(self, failover: SwitchRecord, limit: float = CONFIRM_SECONDS) -> SwitchRecord:
        """The failover's record once the tasks copying to the member it fled to counted what it left
        behind (the member left answers again); as it is if that takes longer than ``limit``."""

        def check() -> SwitchRecord | None:
            found = next(
                (r for r in self.files.switches_to(failover.target, 0) if r.decided == failover.decided), None
            )
            return found if found is not None and found.events_left_behind_confirmed is not None else None

        with contextlib.suppress(TimeoutError):
            found: SwitchRecord = self.wait(check, "", limit)
            return found
        return failover

    def _failed_over(self, primary: str, killed: float) -> SwitchRecord | None:
        status = self.files.status()
        records = status.switches if status is not None else []
        return next(
            (r for r in records if r.target != primary and r.decided.timestamp() >= int(killed)), None
        )

    def _recorded(self, member: str, after: float, limit: float = SWITCH_SECONDS) -> list[SwitchRecord]:
        """The records of the switch to ``member``: once the group rests there, and complete (every
        follower flows) if they become so within ``limit``; otherwise as they are."""
        self.wait(
            lambda: _together_on(self.files.status(), member), f"the group did not move to {member}", limit
        )
        with contextlib.suppress(TimeoutError):
            self.wait(lambda: all(r.complete for r in self.files.switches_to(member, after)), "", limit)
        return self.files.switches_to(member, after)

    def _write_request(self, member: str, token: str) -> None:
        documents = list(yaml.safe_load_all(self.copy.read_text(encoding="utf-8")))
        for body in documents:
            meta = (body or {}).get("metadata") or {}
            if body and body.get("kind") == "FailoverGroup" and meta.get("name") == self.group.name:
                spec = body.setdefault("spec", {})
                spec["activeMember"], spec["switchRequest"] = member, token
                spec.setdefault("switching", {})["planned"] = True
        self.copy.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")


def flowing_on(state: StateDir, namespace: str, task: str) -> str | None:
    """The member a following task's source reads, once a batch ended there (None: none yet)."""
    return ReplicationTaskStatus.model_validate(task_status(state, namespace, task)).active_source_member


def member_healthy(status: FailoverGroupStatus | None, member: str) -> bool:
    """Whether ``member`` answers its probes again."""
    return status is not None and any(p.member == member and p.healthy for p in status.probes)


def _together_on(status: FailoverGroupStatus | None, member: str) -> bool:
    return status is not None and status.producer_member == status.consumer_member == member


def tell(
    say: Callable[[str], None], what: str, records: Sequence[SwitchRecord], killed: float | None = None
) -> list[str]:
    """Says each record; returns what went wrong in them (a follower that never flowed on the member)."""
    faults = []
    for record in records:
        say(f"{what}: {describe(record, killed)}")
        late = [f.task for f in record.followers if f.flowing_seconds is None]
        if late:
            faults.append(f"{what} to {record.target}: not flowing there: {', '.join(late)}")
    return faults


def run_drill(
    files: Sequence[Path], state_dir: Path, *, kill: bool, group_name: str | None, say: Callable[[str], None]
) -> list[str]:
    """The drill (see the module's docstring); DrillRefused when the group cannot be drilled. Returns what
    went wrong in the switches (empty: the drill passed)."""
    group = find_group(files, group_name, kill)
    workdir = state_dir / "drill"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    copies = [workdir / f"{i}-{path.name}" for i, path in enumerate(files)]
    for path, copy in zip(files, copies, strict=True):
        shutil.copyfile(path, copy)
    run = RunProcess(copies, state_dir, workdir / "run.log")
    drill = Drill(group, copies[files.index(group.path)], run, say)
    spec = group.spec
    primary = spec.primary_member
    other = next(m.name for m in spec.members if m.name != primary)
    run.start()
    try:
        say(f"drill of FailoverGroup {group.namespace}/{group.name}: waiting until it is healthy ({run.log})")
        drill.ready()
        faults = tell(say, "planned", drill.request(other))
        faults += tell(say, "planned back", drill.request(primary))
        if kill:
            namespace = next(m for m in spec.members if m.name == primary).connection.emulator
            assert namespace is not None  # find_group checked it
            records, killed = drill.kill(primary, namespace.namespace)
            goal = detection_goal(spec.probe)
            faults += tell(say, f"killed (goal: decided within {goal:.0f}s)", records, killed)
            faults += late_decisions(records, killed, goal)
            drill.revive(namespace.namespace)
            if records and records[0].loss_tasks:  # tasks copied to the member it fled to: they count
                say(f"killed, once {primary} answered again: {describe(drill.confirmed(records[0]), killed)}")
            faults += tell(say, "failback", drill.request(primary))
    finally:
        run.stop()
    return faults


def late_decisions(records: Sequence[SwitchRecord], killed: float, goal: float) -> list[str]:
    """The failover decided later after the kill than the detection goal allows."""
    late = [s for r in records[:1] if (s := r.decided.timestamp() - killed) > goal]
    return [f"killed: decided {s:.1f}s after the kill, goal {goal:.0f}s" for s in late]
