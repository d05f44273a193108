"""The first step of a ReplicationTask pass: read everything the pass decides from, each object once —
the FailoverGroups the task follows, the Secrets its Spark pods will read, the service account they sign in
as with workload identity, their checkpoint claim, whether the cluster serves the launcher's resource, and
the task's stored children (its ConfigMap and its Spark application). Planning and applying then work from
these inputs without reading again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from federator.kube.client import (
    CONFIGMAPS,
    PERSISTENT_VOLUME_CLAIMS,
    SECRETS,
    SERVICE_ACCOUNTS,
    KubeClient,
    ResourceRef,
)
from federator.planning.errors import PlanningError
from federator.planning.following import Following, followed_groups, resolve_following
from federator.planning.launchers import LAUNCHERS
from federator.planning.secrets import secret_bindings
from federator.planning.task import (
    task_checkpoint,
    task_config_map_name,
    task_launcher,
    task_service_account,
    workload_identities,
)
from federator.provision.secrets import SecretsAtHand
from federator.settings import OperatorSettings
from federator_contract.api.base import GROUP, VERSION
from federator_contract.api.replicationtask import ReplicationTaskSpec

FAILOVER_GROUPS = ResourceRef(f"{GROUP}/{VERSION}", "failovergroups")


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
    client: KubeClient, namespace: str, name: str, spec: ReplicationTaskSpec, settings: OperatorSettings
) -> TaskInputs:
    """What one pass of task `namespace/name` reads."""
    groups = {g: await client.get(FAILOVER_GROUPS.path(namespace, g)) for g in followed_groups(spec)}
    try:
        following = resolve_following(spec, groups)
    except PlanningError as err:
        return TaskInputs(err)
    spec = following.spec
    names = sorted({binding.secret_name for binding in secret_bindings(spec)})
    secrets = {secret: await client.get(SECRETS.path(namespace, secret)) for secret in names}
    account = (
        await client.get(SERVICE_ACCOUNTS.path(namespace, task_service_account(spec, settings)))
        if workload_identities(spec)
        else None
    )
    _, pvc = task_checkpoint(name, namespace, spec, settings)
    claim = await client.get(PERSISTENT_VOLUME_CLAIMS.path(namespace, pvc.claim_name)) if pvc else None
    module = LAUNCHERS[task_launcher(spec, settings)]
    served = await client.serves(module.API_VERSION, module.PLURAL)
    config_map = await client.get(CONFIGMAPS.path(namespace, task_config_map_name(name)))
    app = (
        await client.get(ResourceRef(module.API_VERSION, module.PLURAL).path(namespace, name))
        if served
        else None
    )
    return TaskInputs(following, secrets, served, config_map, app, account, claim)
