"""The controllers of a local run, without Kubernetes: mirror provisioning passes and failover group rounds
on one asyncio loop in a background thread. The first pass of each runs before any task starts (a
mirror's tasks read subscriptions it creates; a following task needs the member its group chose); then
mirrors are provisioned again on the operator's schedule (after a failure with backoff, otherwise every
drift interval) and groups probed every `probe.periodSeconds`. The session reads the results, and is told
at once when a group's round moved its producers or consumers (`on_switch`), so that the tasks following it
are planned again without waiting for the session's next refresh."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from federator.failover.probes import Prober
from federator.local.groups import GroupLoop
from federator.local.management import amqp_connection_strings, emulator_environment
from federator.local.mirrors import provision
from federator.local.model import GroupRun, MirrorRun
from federator.local.state import StateDir
from federator.local.taskobjects import TaskObjects
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome
from federator.provision.schedule import ProvisionSchedule
from federator.reasons import MANAGEMENT_UNAVAILABLE
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.servicebusmirror import MirrorMember

T = TypeVar("T")
FIRST_PASS_SECONDS = 120.0
STOP_SECONDS = 10.0
RETRY_SECONDS = 5.0
"""First wait after a failed provisioning pass (doubling up to the drift interval)."""


class Controller:
    def __init__(
        self,
        mirrors: list[MirrorRun],
        groups: list[GroupRun],
        state: StateDir,
        ready: Mapping[str, Any],
        cloud: ManagementEnvironment | None = None,
        on_switch: Callable[[], None] | None = None,
        tasks: TaskObjects | None = None,
    ) -> None:
        """``ready``: the emulator's ready document (empty without an emulator); ``cloud``: how members
        outside the emulator are reached (Azure's public cloud by default); ``on_switch``: called from the
        controllers' thread after a round that moved a group's members, once they can be read; ``tasks``: the
        run's ReplicationTasks as the groups' rounds read them (local/taskobjects.py)."""
        self.mirrors = mirrors
        self.on_switch = on_switch
        self.state = state
        self.emulator_env = emulator_environment(ready) if ready else None
        self.cloud = cloud or ManagementEnvironment()
        self.prober = Prober()
        emulators = amqp_connection_strings(ready) if ready else {}
        self.groups = [
            GroupLoop(g, state, emulators, self.prober, self._dns_env(g.spec, ready), tasks) for g in groups
        ]
        self.outcomes: dict[str, list[MemberOutcome]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="federator-controllers", daemon=True
        )
        self._tasks: list[asyncio.Task[None]] = []

    def _dns_env(self, spec: FailoverGroupSpec, ready: Mapping[str, Any]) -> ManagementEnvironment | None:
        dns = spec.publishing.dns
        if dns is None or self.emulator_env is None:
            return None
        zone = dns.zone
        served = {(z["name"], z["subscriptionId"], z["resourceGroup"]) for z in ready.get("dnsZones") or []}
        return (
            self.emulator_env
            if (zone.zone_name, zone.subscription_id, zone.resource_group) in served
            else None
        )

    def env_for(self, member: MirrorMember) -> ManagementEnvironment:
        """The emulator's management for a member in it; Azure's (or another cloud's) for the others."""
        if member.connection.emulator is not None and self.emulator_env is not None:
            return self.emulator_env
        return self.cloud

    def group_object(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A group as following tasks read it (None until it chose members)."""
        return self._group(namespace, name).object()

    def group_version(self, namespace: str, name: str) -> int:
        return _version(self._group(namespace, name))

    def _group(self, namespace: str, name: str) -> GroupLoop:
        return next(g for g in self.groups if (g.run.namespace, g.run.name) == (namespace, name))

    # ------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """The first pass of every mirror and group (blocking), then the periodic ones in the background."""
        self._thread.start()
        self._call(self._first_passes(), FIRST_PASS_SECONDS)
        for run in self.mirrors:
            self._tasks.append(self._call(self._spawn(self._mirror_loop(run)), STOP_SECONDS))
        for group in self.groups:
            self._tasks.append(self._call(self._spawn(self._group_loop(group)), STOP_SECONDS))

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):  # stopping must not fail on a probe's teardown
            self._call(self._shutdown(), STOP_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_SECONDS)
        if not self._thread.is_alive():
            self._loop.close()

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(coroutine)

    async def _shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.prober.close()

    # ------------------------------------------------------------------------------------------ passes

    async def _first_passes(self) -> None:
        await asyncio.gather(*(self._provision(run) for run in self.mirrors), *map(self._round, self.groups))

    async def _round(self, group: GroupLoop) -> None:
        before = _version(group)
        try:
            await group.round()
        except Exception as err:  # the loop must outlive one bad round
            group.failed_round(err)
        if self.on_switch is not None and _version(group) != before:
            self.on_switch()

    async def _provision(self, run: MirrorRun) -> bool:
        """One pass; True when a member failed (or the pass itself did: it is retried, and the outcome of
        the last pass stays shown)."""
        try:
            outcomes = await provision(run, self.env_for, self.state)
        except Exception as err:  # shown as every member's failure; the pass is retried
            message = f"the provisioning pass failed: {err!r}"
            outcomes = [
                MemberOutcome(m.name, "Failed", MANAGEMENT_UNAVAILABLE, message, True)
                for m in run.spec.members
            ]
        self.outcomes[run.key] = outcomes
        return any(o.state != "Provisioned" for o in outcomes)

    async def _mirror_loop(self, run: MirrorRun) -> None:
        schedule = ProvisionSchedule()
        failed = any(o.state != "Provisioned" for o in self.outcomes.get(run.key, []))
        drift = self.cloud.drift_interval_seconds
        while True:
            await asyncio.sleep(schedule.record(time.monotonic(), failed, RETRY_SECONDS, drift))
            failed = await self._provision(run)

    async def _group_loop(self, group: GroupLoop) -> None:
        # At a fixed rate, as failover detection is promised in periods: sleeping a period after each
        # round would add every round's own time (a probe of a dead member's timeout among it).
        due = time.monotonic()
        while True:
            due = max(due + group.period, time.monotonic())  # an overrun does not make the next ones hurry
            await asyncio.sleep(due - time.monotonic())
            await self._round(group)


def _version(group: GroupLoop) -> int:
    """How many times the group's published members changed (GroupSnapshot.version)."""
    return group.snapshot.version if group.snapshot is not None else 0
