"""A ReplicationTask → the children the operator owns: the task ConfigMap and a Spark application plan
that a launcher turns into its own resource."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, Unpack

from pydantic import TypeAdapter, ValidationError

from federator import reasons
from federator.planning.errors import PlanningError
from federator.planning.following import Following
from federator.planning.memo import per_object
from federator.planning.secrets import SecretBinding, secret_bindings
from federator.settings import Launcher, OperatorSettings
from federator.validation.credential_scope import CredentialScope
from federator.validation.pod_policy import PodPolicy
from federator.validation.problems import join_path
from federator_contract.api.base import API_VERSION, ConfigMapKeySelector, WorkloadIdentity
from federator_contract.api.connections import connections
from federator_contract.api.replicationtask import ReplicationTaskSpec, SparkResources
from federator_contract.sparkconf import APP_SPARK_CONF
from federator_contract.taskconfig import (
    RESET_POSITIONS_ANNOTATION,
    RESET_TOKEN_MAX_LENGTH,
    ResetToken,
    TaskConfig,
    TaskMetadata,
)

# Where the Spark image keeps the replication app, and where the pods find the task and checkpoints.
MAIN_APPLICATION_FILE = "local:///opt/federator/replicate.py"
TASK_CONFIG_DIR = "/etc/federator/task"
TASK_CONFIG_KEY = "task.json"
CHECKPOINT_MOUNT = "/var/lib/federator/checkpoint"
CONFIG_MAP_DIR = "/etc/federator/config-maps"  # editor documents: <dir>/<ConfigMap>/<key>

MANAGED_BY = "federator"
# The label on a shared application's pods and Spark application, and on its members' task ConfigMaps: the
# driver selects its task configs by it (`--task-configmaps federator.io/application=<name>`).
APPLICATION_LABEL = "federator.io/application"
TASK_LABEL = "federator.io/replication-task"  # on a task's children and its own application's pods
# The label the AKS workload identity webhook looks for: it projects the service account's token into such
# pods and sets AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE and AZURE_AUTHORITY_HOST.
WORKLOAD_IDENTITY_LABEL = "azure.workload.identity/use"


@dataclass(frozen=True)
class Owner:
    """The owning object, for ownerReferences (the API server garbage-collects children with it)."""

    api_version: str
    kind: str
    name: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class PvcMount:
    claim_name: str
    sub_path: str


@dataclass(frozen=True, order=True)
class ConfigMapFile:
    """A ConfigMap key an editor reads (a JSON Schema, a lookup table, an Avro schema), mounted as a file."""

    config_map: str
    key: str

    @property
    def ref(self) -> str:
        """How the task config names it: `<ConfigMap>/<key>`."""
        return f"{self.config_map}/{self.key}"

    @property
    def path(self) -> str:
        return f"{CONFIG_MAP_DIR}/{self.config_map}/{self.key}"


@dataclass(frozen=True)
class IdentityUse:
    """A connection that signs in with workload identity: where in the spec, and the client id it names
    (None: the one the pods' service account is annotated with)."""

    path: str
    client_id: str | None


@dataclass(frozen=True)
class SparkAppPlan:
    """Everything a launcher needs, independent of which Spark operator runs it."""

    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    owner: Owner | None
    image: str
    spark_version: str
    service_account: str
    """Of the driver and the executors: both reach the namespaces (workload identity signs them in)."""
    run_as_user: int
    run_as_group: int
    main_file: str
    arguments: list[str]
    driver: SparkResources
    executor_instances: int
    executor: SparkResources
    spark_conf: dict[str, str]
    config_map: str | None
    """The task ConfigMap mounted at TASK_CONFIG_DIR; None for a shared application, whose driver reads
    its members' ConfigMaps through the API (planning/application.py)."""
    secrets: list[SecretBinding] = field(default_factory=list)
    config_map_files: list[ConfigMapFile] = field(default_factory=list)
    checkpoint_pvc: PvcMount | None = None
    checkpoint_claims: list[str] = field(default_factory=list)
    """Claims mounted whole at `CHECKPOINT_MOUNT/<claim>` (a shared application: each member's checkpoint
    is a directory on one of them, so a member joining on a known claim changes no pod)."""
    optional_references: bool = False
    """Secret keys are optional for the kubelet: a shared application's pods start even while one member's
    Secret is missing (that member alone stalls, named by its own pass)."""
    metrics_port: int = 9464
    workload_identities: list[IdentityUse] = field(default_factory=list)
    pod_only_labels: dict[str, str] = field(default_factory=dict)
    """Labels of the pods but not of the Spark application, whose labels say whose it is (a task's own
    host: planning/follower.py)."""

    @property
    def pod_labels(self) -> dict[str, str]:
        """Labels of the driver and executor pods."""
        identity = {WORKLOAD_IDENTITY_LABEL: "true"} if self.workload_identities else {}
        return {**self.labels, **self.pod_only_labels, **identity}


@dataclass(frozen=True)
class TaskPlan:
    launcher: Launcher
    task_config: TaskConfig
    config_map: dict[str, Any]
    """The ConfigMap that carries ``task_config`` to the pods (`task_config_map`)."""
    spark_app: SparkAppPlan


class TaskArguments(TypedDict):
    """What a task is planned from (`plan_replication_task`, `task_parts`, a shared application's member's
    `plan_member_task`)."""

    name: str
    namespace: str
    spec: ReplicationTaskSpec
    settings: OperatorSettings
    uid: NotRequired[str | None]
    generation: NotRequired[int | None]
    local: NotRequired[bool]
    following: NotRequired[Following | None]
    annotations: NotRequired[Mapping[str, str] | None]


def task_arguments(
    meta: Mapping[str, Any], following: Following, settings: OperatorSettings
) -> TaskArguments:
    """The arguments of a task object (its metadata) whose spec, its followed groups' members in place, is
    ``following.spec``."""
    return TaskArguments(
        name=meta["name"],
        namespace=meta.get("namespace", "default"),
        spec=following.spec,
        settings=settings,
        uid=meta.get("uid"),
        generation=meta.get("generation"),
        following=following,
        annotations=meta.get("annotations") or {},
    )


@dataclass(frozen=True)
class TaskParts:
    """What a task has wherever it runs (its own application or a shared one): its config, the ConfigMap
    carrying it, and what its query needs from the pods."""

    owner: Owner | None
    labels: dict[str, str]
    task_config: TaskConfig
    config_map: dict[str, Any]
    secrets: list[SecretBinding]
    config_map_files: list[ConfigMapFile]
    checkpoint_pvc: PvcMount | None
    reset_positions: str | None


def plan_replication_task(**arguments: Unpack[TaskArguments]) -> TaskPlan:
    """The desired children of one task. Raises PlanningError for specs that cannot run in a cluster;
    ``local`` (the `federator run` mode) allows emulator connections, which only exist there. For a task
    that follows FailoverGroups, ``spec`` is ``following.spec`` (planning/following.py). ``annotations``:
    the task's, of which `federator.io/reset-positions` reaches the app. A task of a shared application
    (`spec.runtime.applicationRef`) is planned by planning/application.py instead."""
    parts = task_parts(**arguments)
    name, namespace, spec, settings = (
        arguments["name"],
        arguments["namespace"],
        arguments["spec"],
        arguments["settings"],
    )
    following = arguments.get("following")
    reset = parts.reset_positions
    runtime = spec.runtime
    app = SparkAppPlan(
        name=name,
        namespace=namespace,
        labels=parts.labels,
        annotations={
            **scrape_annotations(settings),
            **(following.annotations if following is not None else {}),
            # A new token changes the Spark application: it restarts, and resets its positions.
            **({RESET_POSITIONS_ANNOTATION: reset} if reset is not None else {}),
        },
        owner=parts.owner,
        image=runtime.image or settings.spark_image,
        spark_version=settings.spark_version,
        service_account=task_service_account(spec, settings),
        run_as_user=settings.spark_run_as_user,
        run_as_group=settings.spark_run_as_group,
        main_file=MAIN_APPLICATION_FILE,
        arguments=["--task-config", f"{TASK_CONFIG_DIR}/{TASK_CONFIG_KEY}"],
        driver=runtime.driver,
        executor_instances=runtime.executor.instances,
        executor=SparkResources(cores=runtime.executor.cores, memory=runtime.executor.memory),
        spark_conf=app_spark_conf(runtime.spark_conf),
        config_map=parts.config_map["metadata"]["name"],
        secrets=parts.secrets,
        config_map_files=parts.config_map_files,
        checkpoint_pvc=parts.checkpoint_pvc,
        metrics_port=settings.app_metrics_port,
        workload_identities=workload_identities(spec),
    )
    return TaskPlan(
        launcher=task_launcher(spec, settings),
        task_config=parts.task_config,
        config_map=parts.config_map,
        spark_app=app,
    )


def task_parts(
    *,
    name: str,
    namespace: str,
    spec: ReplicationTaskSpec,
    settings: OperatorSettings,
    uid: str | None = None,
    generation: int | None = None,
    local: bool = False,
    following: Following | None = None,
    annotations: Mapping[str, str] | None = None,
    application: str | None = None,
) -> TaskParts:
    """A task's config and ConfigMap (see `plan_replication_task`). With ``application`` (the shared
    application it runs in), the ConfigMap is labelled for that application's driver, and the checkpoint is
    a directory on its claim as the application mounts it (`member_checkpoint`)."""
    reset = reset_positions(annotations)
    if not local:
        _refuse_local_only(spec)
        _refuse_outside_pod_policy(spec, settings)
        _refuse_hosts_outside_azure(spec, settings)
        _refuse_unmounted_checkpoint(spec)
    owner = Owner(API_VERSION, "ReplicationTask", name, uid) if uid else None
    labels = {
        "app.kubernetes.io/name": "federator-replication",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        TASK_LABEL: name,
        **({APPLICATION_LABEL: application} if application is not None else {}),
    }
    checkpoint_location, pvc = task_checkpoint(name, namespace, spec, settings)
    if application is not None and pvc is not None:
        checkpoint_location = member_checkpoint(pvc)
    secrets = secret_bindings(spec)
    files = config_map_files(spec)
    task_config = TaskConfig(
        metadata=TaskMetadata(name=name, namespace=namespace, generation=generation),
        spec=spec,
        checkpoint_location=checkpoint_location,
        # The app resolves each `secretRef` through these environment variables...
        secret_env={b.ref: b.env_var for b in secrets},
        # ...and reads each ConfigMap key an editor names from these files.
        config_map_files={f.ref: f.path for f in files},
        metrics_port=settings.app_metrics_port,
        followed_members=following.members if following is not None else {},
        following=following.source if following is not None else None,
        reset_positions=reset,
    )
    config_map = task_config_map(task_config_map_name(name), labels, owner, task_config)
    return TaskParts(owner, labels, task_config, config_map, secrets, files, pvc, reset)


def member_checkpoint(pvc: PvcMount) -> str:
    """Where a shared application's member checkpoints: its claim is mounted whole at
    `CHECKPOINT_MOUNT/<claim>` (not at the member's sub-path, which would change the pods for every member
    that joins), so the member's directory is the same one a Spark application of its own used."""
    return f"file://{CHECKPOINT_MOUNT}/{pvc.claim_name}/{pvc.sub_path}"


def scrape_annotations(settings: OperatorSettings) -> dict[str, str]:
    """Where Prometheus scrapes the driver."""
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(settings.app_metrics_port),
        "prometheus.io/path": "/metrics",
    }


def app_spark_conf(own: Mapping[str, str] | None, *between: Mapping[str, str]) -> dict[str, str]:
    """The Spark settings of an application: graceful stop and the app's defaults, then ``between`` (the
    operator's), then the spec's own ``sparkConf``, which may override all of them."""
    merged = {"spark.sql.streaming.stopGracefullyOnShutdown": "true", **APP_SPARK_CONF}
    for conf in between:
        merged.update(conf)
    return {**merged, **(own or {})}


_RESET_TOKEN: TypeAdapter[str] = TypeAdapter(ResetToken)


def reset_positions(annotations: Mapping[str, str] | None) -> str | None:
    """The task's reset token (its `federator.io/reset-positions` annotation), or None."""
    token = (annotations or {}).get(RESET_POSITIONS_ANNOTATION)
    if token is None:
        return None
    try:
        return _RESET_TOKEN.validate_python(token)
    except ValidationError:
        raise PlanningError(
            reasons.INVALID_SPEC,
            f"metadata.annotations[{RESET_POSITIONS_ANNOTATION}]: {token!r} is not a reset token: 1 to "
            f"{RESET_TOKEN_MAX_LENGTH} printable ASCII characters, not starting or ending with a space",
        ) from None


def task_config_map_name(task: str) -> str:
    """The task ConfigMap's name."""
    return f"{task}-task"


def task_launcher(spec: ReplicationTaskSpec, settings: OperatorSettings) -> Launcher:
    """The Spark operator that runs the task: its own choice, else the operator's default."""
    return spec.runtime.launcher or settings.launcher


def task_service_account(spec: ReplicationTaskSpec, settings: OperatorSettings) -> str:
    """The service account the Spark pods run under (and sign in as, with workload identity)."""
    return spec.runtime.service_account_name or settings.spark_service_account


def task_config_map(
    name: str, labels: dict[str, str], owner: Owner | None, task_config: TaskConfig
) -> dict[str, Any]:
    """The ConfigMap the Spark pods mount the task config from: the one place it is serialized."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, task_config.namespace, labels, owner),
        "data": {TASK_CONFIG_KEY: task_config.to_json()},
    }


def config_map_files(spec: ReplicationTaskSpec) -> list[ConfigMapFile]:
    """Every ConfigMap key the editors read, once each, in a stable order."""
    found: set[ConfigMapFile] = set()
    for editor in spec.editors:
        refs: list[ConfigMapKeySelector | None] = []
        if editor.validate_ is not None:
            refs.append(editor.validate_.schema_config_map_ref)
        if editor.enrich is not None and editor.enrich.lookup is not None:
            refs.append(editor.enrich.lookup.config_map_ref)
        if editor.transcode is not None and editor.transcode.avro_schema is not None:
            refs.append(editor.transcode.avro_schema.config_map_ref)
        found.update(ConfigMapFile(ref.name, ref.key) for ref in refs if ref is not None)
    return sorted(found)


def _meta(name: str, namespace: str, labels: dict[str, str], owner: Owner | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if owner is not None:
        meta["ownerReferences"] = [owner.reference()]
    return meta


def child_meta(plan: SparkAppPlan) -> dict[str, Any]:
    """Metadata of the Spark application resource (shared by the launchers)."""
    return _meta(plan.name, plan.namespace, plan.labels, plan.owner)


def task_checkpoint(
    name: str, namespace: str, spec: ReplicationTaskSpec, settings: OperatorSettings
) -> tuple[str, PvcMount | None]:
    """Where the app checkpoints, and the claim it is on (None for a URI: local mode only)."""
    checkpoint = spec.runtime.checkpoint
    if checkpoint is not None and checkpoint.uri is not None:
        return checkpoint.uri, None
    if checkpoint is not None and checkpoint.persistent_volume_claim is not None:
        claim = checkpoint.persistent_volume_claim
        return f"file://{CHECKPOINT_MOUNT}", PvcMount(
            claim.claim_name, claim.sub_path or f"{namespace}/{name}"
        )
    return f"file://{CHECKPOINT_MOUNT}", PvcMount(settings.checkpoint_claim, f"{namespace}/{name}")


@per_object
def workload_identities(spec: ReplicationTaskSpec) -> list[IdentityUse]:
    """Every Event Hubs / Service Bus connection of ``spec`` that signs in with workload identity."""
    found = []
    for site in connections(spec):
        identity = site.connection.workload_identity
        if isinstance(identity, WorkloadIdentity):
            found.append(IdentityUse(site.field_path, identity.client_id))
    return found


def _refuse_local_only(spec: ReplicationTaskSpec) -> None:
    for site in connections(spec):
        if site.connection.emulator is not None:
            raise PlanningError(
                reasons.EMULATOR_ONLY_IN_LOCAL_MODE,
                f"{site.field_path} points at the built-in emulator, which exists only in local mode "
                "(`federator run`); use secretRef or workloadIdentity in a cluster",
            )
        if site.followed_group is not None:
            raise PlanningError(
                reasons.FAILOVER_GROUP_FOLLOWING_NOT_AVAILABLE,
                f"{site.field_path} follows a FailoverGroup: only the operator, which reads the group, can "
                "plan it",
            )


def _refuse_unmounted_checkpoint(spec: ReplicationTaskSpec) -> None:
    """A checkpoint URI names a place no pod of a cluster has: positions written there would land on the
    container's own file system and be gone at the next restart. Only a claim is mounted."""
    checkpoint = spec.runtime.checkpoint
    if checkpoint is not None and checkpoint.uri is not None:
        raise PlanningError(
            reasons.CHECKPOINT_NOT_MOUNTED,
            f"spec.runtime.checkpoint.uri: {checkpoint.uri!r} is mounted by no Spark pod, so positions "
            "kept there would be lost at the next restart; use runtime.checkpoint.persistentVolumeClaim "
            "(a ReadWriteMany claim), or leave checkpoint out for the operator's default claim",
        )


def _refuse_hosts_outside_azure(spec: ReplicationTaskSpec, settings: OperatorSettings) -> None:
    """A workload identity token only to Azure's hosts and the installer's (validation/credential_scope.py):
    the pods' identity may be one the installer annotated their ServiceAccount with."""
    findings = CredentialScope.from_settings(settings).host_findings(spec)
    if findings:
        raise PlanningError(findings[0].reason, "; ".join(f"{f.field_path}: {f.message}" for f in findings))


def _refuse_outside_pod_policy(spec: ReplicationTaskSpec, settings: OperatorSettings) -> None:
    """The cluster's pods only as the installer allows them (validation/pod_policy.py)."""
    findings = PodPolicy.from_settings(settings).findings(spec.runtime)
    if findings:
        raise PlanningError(
            findings[0].reason,
            "; ".join(f"{join_path(['spec', *f.path])}: {f.message}" for f in findings),
        )
