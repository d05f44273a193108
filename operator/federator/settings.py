"""Operator-wide settings, read once from the environment (`FEDERATOR_<FIELD>`) by one typed parser."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args, get_type_hints

Launcher = Literal["kubeflow", "apache"]


@dataclass(frozen=True)
class OperatorSettings:
    launcher: Launcher = "kubeflow"
    """Default Spark launcher for tasks that do not choose one. kubeflow: the most installed operator, with
    an Argo CD health check upstream."""
    spark_image: str = "ghcr.io/federator/federator-spark:0.1.0"
    """Image of the Spark replication application (Dockerfile target `spark`)."""
    spark_version: str = "4.3.0"
    """Spark version inside `spark_image`; both launchers require it."""
    spark_service_account: str = "federator-spark"
    """Service account of Spark driver and executor pods for tasks that name none (the driver creates
    executor pods with it)."""
    spark_run_as_user: int = 185
    """The uid the Spark image runs as (its `USER`, as in Spark's own images): driver and executor pods
    run with it, non-root, as Pod Security "restricted" requires."""
    spark_run_as_group: int = 185
    """The image's gid: the pods' primary group, and the group that owns what they write on volumes."""
    checkpoint_claim: str = "federator-checkpoints"
    """PersistentVolumeClaim for checkpoints of tasks that name none; a sub-path per task."""
    app_metrics_port: int = 9464
    """Port of the replication app's Prometheus endpoint in the driver pod."""
    observe_interval_seconds: int = 15
    """How often each task's Spark application is observed and drift is corrected. 15 s: status stays
    fresh for on-call engineers without loading the API server (one GET per task per interval)."""
    source_probe_interval_seconds: int = 60
    """How long a ReplicationTask source's probe answer (condition SourceReachable) holds: one AMQP
    connection per source and credential per period, shared by every pass and task that reads it. A
    changed connection (another Secret value, a followed group's switch) is probed at once. Probing at
    every observe pass was half the operator's idle CPU with 1,000 tasks."""
    retry_seconds: int = 30
    """Pause before retrying a task blocked on something outside it (a missing Secret, no launcher)."""
    metrics_port: int = 9090
    """Port of the operator's own Prometheus endpoint."""
    metrics_address: str = "0.0.0.0"
    """Address that endpoint listens on (all interfaces in a pod; 127.0.0.1 where the network is shared)."""
    arm_endpoint: str = "https://management.azure.com"
    """Azure Resource Manager endpoint; another cloud's for sovereign clouds."""
    ca_bundle: str = ""
    """CA bundle for the management APIs (ARM, Service Bus administration, DNS). Default: system CAs."""
    drift_interval_seconds: int = 300
    """How often provisioned Service Bus entities are re-read for drift (one management read per entity)."""
    allowed_images: str = ""
    """Images a task may name in `runtime.image` besides `spark_image`'s repository: comma-separated
    `registry/repo` (any tag or digest), `registry/repo:tag`, `registry/repo@sha256:...` or globs
    (the chart's `podPolicy.images`; validation/pod_policy.py)."""
    allowed_service_accounts: str = "*"
    """ServiceAccounts a task may name in `runtime.serviceAccountName` besides `spark_service_account`:
    comma-separated names or globs (`podPolicy.serviceAccounts`). Any, by default: a multi-tenant install
    lists those its tenants may use, so that none runs as another workload's account."""
    allowed_spark_conf: str = ""
    """Spark settings a task may set besides the built-in tuning keys: comma-separated keys or globs
    (`podPolicy.sparkConf`)."""
    allowed_credential_service_accounts: str = "*"
    """ServiceAccounts a mirror member's or DNS zone's `credential.serviceAccount` may name: comma-separated
    `name` or `namespace/name`, each part a glob (the chart's `credentials.serviceAccounts`;
    validation/credential_scope.py). Any, by default."""
    allowed_endpoint_suffixes: str = ""
    """Host suffixes a `workloadIdentity` connection may name besides Azure's own (public, partitioned and
    sovereign clouds; validation/credential_scope.py): comma-separated, e.g. an emulator's Service name or
    a private DNS zone (the chart's `credentials.endpointSuffixes`). A token is sent to that host."""
    operator_identity_namespaces: str = ""
    """Namespaces whose FailoverGroups and ReplicationTask probes may sign in with the operator's own
    Azure identity (a `workloadIdentity` connection): comma-separated names or globs, `*` for all. None
    by default: elsewhere a connection brings its own credential (`secretRef`); the chart's
    `credentials.operatorIdentityNamespaces`. The same list holds for Azure Resource Manager work (a
    mirror's members, a group's DNS zone) whose credential is `workloadIdentity` (provision/scope.py)."""
    operator_identity_subscriptions: str = ""
    """Azure subscription IDs on which that Azure Resource Manager work may use the operator's identity:
    comma-separated. Empty: any subscription, in the namespaces listed above (which alone decide whether
    the identity is lent at all); the chart's `credentials.operatorIdentitySubscriptions`."""

    def __post_init__(self) -> None:
        for name in ("spark_run_as_user", "spark_run_as_group"):
            if getattr(self, name) < 1:
                raise ValueError(f"FEDERATOR_{name.upper()}: expected a non-root id (1 or more)")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        """Settings from `FEDERATOR_<FIELD>` variables; unknown values fail loudly with the variable name."""
        env = os.environ if env is None else env
        hints = get_type_hints(cls)
        values: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            name = f"FEDERATOR_{f.name.upper()}"
            if name in env:
                values[f.name] = _parse(name, env[name], hints[f.name])
        return cls(**values)  # type: ignore[arg-type]


def listed(value: str) -> list[str]:
    """The items of a comma-separated setting (`FEDERATOR_ALLOWED_*`), blanks dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _parse(name: str, raw: str, hint: object) -> object:
    choices = get_args(hint)
    if choices and all(isinstance(c, str) for c in choices):
        if raw not in choices:
            raise ValueError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
        return raw
    if hint is int:
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{name}={raw!r}: expected an integer") from None
    return raw
