"""The first step of a ReplicationTask pass: read everything the pass decides from, each object once —
the FailoverGroups the task follows, the Secrets its Spark pods will read, the service account they sign in
as with workload identity, their checkpoint claim, whether the cluster serves the launcher's resource, and
the task's stored children (its ConfigMap and its Spark application). Planning and applying then work from
these inputs without reading again. In the operator, children come from their watched copies and Secrets,
service accounts and claims through a short-lived cache (kube/reads.py), so a pass with nothing to do asks
the API server nothing. What the stored ConfigMap says changed since (a followed group's switch) is read
here too (`member_switch`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from federator import reasons
from federator.kube.reads import ClusterReads
from federator.kube.resources import (
    CONFIGMAPS,
    FAILOVER_GROUPS,
    PERSISTENT_VOLUME_CLAIMS,
    SECRETS,
    SERVICE_ACCOUNTS,
    ResourceRef,
)
from federator.planning.errors import PlanningError
from federator.planning.following import Following, resolve_following
from federator.planning.launchers import LAUNCHERS
from federator.planning.secrets import secret_bindings
from federator.planning.task import (
    TASK_CONFIG_KEY,
    task_checkpoint,
    task_config_map_name,
    task_launcher,
    task_service_account,
    workload_identities,
)
from federator.provision.secrets import SecretsAtHand
from federator.settings import OperatorSettings
from federator.status.events import Note
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskConfigError


@dataclass(frozen=True)
class TaskInputs:
    following: Following | PlanningError
    """The spec with the members its FailoverGroups publish in place (planning/following.py), or why it
    cannot have them yet; without following, the spec as it is. Nothing else is read when it cannot."""
    secrets: Mapping[str, dict[str, Any] | None] = field(default_factory=dict, repr=False)
    """Each Secret the Spark pods read, by name, as stored (None: it does not exist)."""
    launcher_served: bool = False
    """Whether the cluster serves the launcher's resource (its Spark operator is installed)."""
    config_map: dict[str, Any] | None = None
    """The task ConfigMap as stored."""
    app: dict[str, Any] | None = None
    """The Spark application as stored (None: none yet, or the launcher is not served)."""
    service_account: dict[str, Any] | None = None
    """The pods' ServiceAccount as stored, read only when they sign in with workload identity."""
    checkpoint_claim: dict[str, Any] | None = None
    """The checkpoint's PersistentVolumeClaim as stored, read only for a checkpoint on a claim."""

    def secret_source(self, namespace: str) -> SecretsAtHand:
        """The Secrets read, for what reads Secrets by path (the source probe)."""
        return SecretsAtHand({SECRETS.path(namespace, n): s for n, s in self.secrets.items()})


async def gather(
    reads: ClusterReads,
    namespace: str,
    name: str,
    spec: ReplicationTaskSpec,
    settings: OperatorSettings,
    followed: Sequence[str],
) -> TaskInputs:
    """What one pass of task `namespace/name` reads; `followed`: the groups it follows
    (planning/following.py: followed_groups)."""
    client = reads.client
    groups = {g: await client.get(FAILOVER_GROUPS.path(namespace, g)) for g in followed}
    try:
        following = resolve_following(spec, groups) if groups else Following(spec)
    except PlanningError as err:
        return TaskInputs(err)
    spec = following.spec
    names = sorted({binding.secret_name for binding in secret_bindings(spec)})
    secrets = {secret: await reads.secrets.get(SECRETS.path(namespace, secret)) for secret in names}
    account = (
        await reads.shared.get(SERVICE_ACCOUNTS.path(namespace, task_service_account(spec, settings)))
        if workload_identities(spec)
        else None
    )
    _, pvc = task_checkpoint(name, namespace, spec, settings)
    claim = await reads.shared.get(PERSISTENT_VOLUME_CLAIMS.path(namespace, pvc.claim_name)) if pvc else None
    module = LAUNCHERS[task_launcher(spec, settings)]
    served = await client.serves(module.API_VERSION, module.PLURAL)
    config_map = await reads.children.get(CONFIGMAPS, namespace, task_config_map_name(name))
    app_ref = ResourceRef(module.API_VERSION, module.PLURAL)
    app = await reads.children.get(app_ref, namespace, name) if served else None
    return TaskInputs(following, secrets, served, config_map, app, account, claim)


def member_switch(
    stored_config_map: dict[str, Any] | None, following: Following, restarts: str = "the app restarts"
) -> Note | None:
    """An Event when a followed group switched since the task's config was last written (the config then
    changes, and ``restarts`` on the new member: its Spark application, or its query in a shared one)."""
    if not following.members:
        return None
    text = ((stored_config_map or {}).get("data") or {}).get(TASK_CONFIG_KEY)
    try:
        before = TaskConfig.from_json(text).followed_members if text else {}
    except TaskConfigError:  # edited by hand: drift, which the pass restores
        return None
    if not before or before == following.members:
        return None
    changes = [
        f"{path} uses {member} (was {before.get(path, 'nothing')})"
        for path, member in sorted(following.members.items())
        if before.get(path) != member
    ]
    return Note(
        "Normal", reasons.FOLLOWED_MEMBER_SWITCHED, "; ".join(changes) + f": task re-planned, {restarts}"
    )
