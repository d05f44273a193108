"""The operator's context: what every handler is given as kopf's `memo`, built once at start-up — the
settings, the API client with what reads through it (the children's watched copies, the Secrets cache), the
management environment, failover's runtime, the source probes, and what is kept per object.

kopf gives each object a shallow copy of the memo; this one is shared as it is (`__copy__`), so there is
one client, one prober and one DNS publisher per operator, and per-object state lives in `objects`, keyed
by uid, created on first use and forgotten in one place."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

import kopf

from federator.failover.runtime import FailoverRuntime
from federator.kube.cached import CachedObjects
from federator.kube.children import Children
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.planning.task import MANAGED_BY
from federator.provision.environment import ManagementEnvironment
from federator.provision.schedule import ProvisionSchedule
from federator.reconcile.replicationapplication import ApplicationMemory
from federator.reconcile.replicationtask import TaskMemory
from federator.reconcile.replicationtask_source import SourceProbes
from federator.settings import OperatorSettings
from federator.validation.credential_scope import CredentialScope

CHILDREN = f"app.kubernetes.io/managed-by={MANAGED_BY}"
"""The label on everything the operator creates: what its watches select."""


@dataclass
class ObjectState:
    """What the operator keeps about one object between handler calls."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One pass at a time: a spec handler and a daemon would otherwise write concurrently."""
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    """Set so that a daemon's next round starts at once: by a group's spec change for its probe daemon, by
    a followed group's switch for a task's observe daemon (handlers/followers.py)."""
    schedule: ProvisionSchedule = field(default_factory=ProvisionSchedule)
    """When a mirror's members are read again."""
    task: TaskMemory = field(default_factory=TaskMemory)
    """A task's spec as parsed and children as planned."""
    application: ApplicationMemory = field(default_factory=ApplicationMemory)
    """A ReplicationApplication's Spark application as last planned."""
    followed: tuple[int, list[str]] | None = None
    """The FailoverGroups a task's spec follows, at a generation (handlers/followers.py): kopf indexes every
    watch event, and a status write must not validate the unchanged spec again."""


class ObjectRegistry:
    """Per-object state by uid: created on first use, dropped by `forget` when the object is deleted."""

    def __init__(self) -> None:
        self._states: dict[str, ObjectState] = {}

    def of(self, body: kopf.Body) -> ObjectState:
        return self._states.setdefault(_key(body), ObjectState())

    def known(self, uid: str) -> ObjectState | None:
        """The state kept for `uid`, without creating one (for what must not outlive a forgotten object)."""
        return self._states.get(uid)

    def wake(self, uids: Iterable[str]) -> int:
        """Set the wake-up event of each object known here; returns how many were. An object not known yet
        has no daemon waiting: its first pass reads what the wake was for."""
        woken = [self._states[uid] for uid in set(uids) if uid in self._states]
        for state in woken:
            state.wakeup.set()
        return len(woken)

    def forget(self, body: kopf.Body) -> None:
        self._states.pop(_key(body), None)

    def __len__(self) -> int:
        return len(self._states)


def _key(body: kopf.Body) -> str:
    return str(body.meta.get("uid") or f"{body.meta.get('namespace')}/{body.meta.get('name')}")


class OperatorContext:
    """One per operator. Tests and benchmarks pass their own settings and management environment (the
    emulator's); the API client is made at start-up, from the connection kopf logged in with."""

    def __init__(
        self,
        settings: OperatorSettings | None = None,
        management: ManagementEnvironment | None = None,
        *,
        serve_metrics: bool = True,
    ) -> None:
        self.settings = settings or OperatorSettings.from_env()
        # The installer's scope: ARM work signs in as the operator only where it allows (provision/scope.py).
        self.management = management or ManagementEnvironment.for_operator(self.settings)
        self.serve_metrics = serve_metrics
        """Whether start-up serves the operator's metrics endpoint (tests run several operators)."""
        scope = CredentialScope.from_settings(self.settings)
        self.failover = FailoverRuntime(self.management, scope=scope)
        self.source_probes = SourceProbes(
            self.failover.prober, scope, ttl=self.settings.source_probe_interval_seconds
        )
        self.objects = ObjectRegistry()
        self._client: KubeClient | None = None
        self._reads: ClusterReads | None = None
        self._children: Children | None = None

    def __copy__(self) -> OperatorContext:
        return self  # kopf's per-object memo: the same context for every object

    async def start(self, connection: kopf.ConnectionInfo) -> None:
        self._client = client = KubeClient.from_connection_info(connection)
        self._children = Children(client, CHILDREN)
        # A Secret, a ServiceAccount or a claim is read at most once per observe interval, however many
        # tasks reference it.
        ttl = self.settings.observe_interval_seconds
        self._reads = ClusterReads(
            client, self._children, CachedObjects(client, ttl), CachedObjects(client, ttl)
        )

    @property
    def client(self) -> KubeClient:
        if self._client is None:
            raise RuntimeError("the operator has not started: no API client yet")
        return self._client

    @property
    def reads(self) -> ClusterReads:
        """Where passes read: the API client, the children's watched copies, the caches of named objects."""
        if self._reads is None:
            raise RuntimeError("the operator has not started: no API client yet")
        return self._reads

    @property
    def stopping(self) -> bool:
        """The operator is shutting down (kopf's cleanup can close the client before it stops daemons)."""
        return self._client is not None and self._client.closed

    async def close(self) -> None:
        await self.failover.close()
        if self._children is not None:
            await self._children.close()
        if self._client is not None:
            await self._client.close()
