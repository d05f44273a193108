"""A ReplicationApplication → its Spark application, and a member task → its task ConfigMap (and no Spark
application of its own). Pure: the members come in as the task configs their ConfigMaps carry.

The application's driver runs `federator_spark.host --task-configmaps federator.io/application=<name>`:
it lists and watches its members' ConfigMaps through the API server with its pod's ServiceAccount token,
so a task that joins, changes or leaves reaches the driver in about a second and only its query starts,
restarts or stops. The pods are the application's: its launcher, image, ServiceAccount, resources and
Spark settings (with the FAIR scheduler, members keeping up served before those catching up, unless
`scheduling.mode` is FIFO).

What the members' queries need from the pods is the union of their needs, in a fixed order: the Secret
keys their connections name, and those of every member of the FailoverGroups they follow, so that a switch
rewrites the following task's config only (environment variables, optional for the kubelet so that one
member's missing Secret stops no other member), the ConfigMap keys their editors read (files), and the
checkpoint claims their directories are on (each mounted whole at `CHECKPOINT_MOUNT/<claim>`). Each of
these is in the pod spec, so **a change of that union restarts the application, and with it every
member's query**: a member that joins or leaves with a Secret key, an editor's ConfigMap key or a
checkpoint claim no other member uses, or that starts or stops signing in with workload identity. Members
on the same Secrets, ConfigMaps and claim as the others (the usual case: one tenant's tasks) join and
leave without it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from federator import reasons
from federator.planning.errors import PlanningError
from federator.planning.secrets import secret_bindings
from federator.planning.task import (
    APPLICATION_LABEL,
    MANAGED_BY,
    Owner,
    SparkAppPlan,
    TaskArguments,
    app_spark_conf,
    config_map_files,
    scrape_annotations,
    task_checkpoint,
    task_parts,
    workload_identities,
)
from federator.settings import Launcher, OperatorSettings
from federator.validation.pod_policy import PodPolicy
from federator.validation.problems import join_path
from federator_contract.api.base import API_VERSION
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.replicationapplication import ReplicationApplicationSpec, SparkResources
from federator_contract.api.replicationtask import ReplicationTaskSpec, Runtime
from federator_contract.taskconfig import TaskConfig

# The file spark-submit runs for a shared application: the image's wrapper of `federator_spark.host`.
HOST_APPLICATION_FILE = "local:///opt/federator/host.py"
KIND = "ReplicationApplication"


def application_selector(application: str) -> str:
    """The label selector of an application's members' task ConfigMaps."""
    return f"{APPLICATION_LABEL}={application}"


@dataclass(frozen=True)
class MemberPlan:
    """A member task's one child: its task ConfigMap, labelled for its application's driver."""

    application: str
    task_config: TaskConfig
    config_map: dict[str, Any]


@dataclass(frozen=True)
class ApplicationPlan:
    launcher: Launcher
    spark_app: SparkAppPlan


def application_name(spec: ReplicationTaskSpec) -> str | None:
    """The ReplicationApplication a task runs in; None for a task with a Spark application of its own."""
    ref = spec.runtime.application_ref
    return ref.name if ref is not None else None


def plan_member_task(**arguments: Unpack[TaskArguments]) -> MemberPlan:
    """The task ConfigMap of a task that names a ReplicationApplication (`spec.runtime.applicationRef`);
    the same checks and config as a task of its own (planning/task.py), the checkpoint where the
    application mounts it. Raises PlanningError as `plan_replication_task` does."""
    application = application_name(arguments["spec"])
    if application is None:
        where = f"{arguments['namespace']}/{arguments['name']}"
        raise ValueError(f"ReplicationTask {where}: spec.runtime.applicationRef is not set")
    parts = task_parts(**arguments, application=application)
    return MemberPlan(application, parts.task_config, parts.config_map)


def plan_application(
    *,
    name: str,
    namespace: str,
    spec: ReplicationApplicationSpec,
    members: Sequence[TaskConfig],
    settings: OperatorSettings,
    uid: str | None = None,
    groups: Mapping[str, FailoverGroupSpec] | None = None,
) -> ApplicationPlan:
    """The Spark application of ReplicationApplication `namespace/name` whose members' task configs are
    ``members`` (as their ConfigMaps carry them; any order). ``groups``: the FailoverGroups the members
    follow, by name, whose every member's Secret keys the pods carry too, so that a switch changes a
    member's config only. Raises PlanningError when the installer's pod policy does not allow its image,
    ServiceAccount or Spark settings."""
    _refuse_outside_pod_policy(spec, settings)
    labels = {
        "app.kubernetes.io/name": "federator-replication",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        APPLICATION_LABEL: name,
    }
    ordered = sorted(members, key=lambda config: config.name)
    claims = {
        pvc.claim_name
        for config in ordered
        if (pvc := task_checkpoint(config.name, config.namespace, config.spec, settings)[1]) is not None
    }
    app = SparkAppPlan(
        name=name,
        namespace=namespace,
        labels=labels,
        annotations=scrape_annotations(settings),
        owner=Owner(API_VERSION, KIND, name, uid) if uid else None,
        image=spec.image or settings.spark_image,
        spark_version=settings.spark_version,
        service_account=spec.service_account_name or settings.spark_service_account,
        run_as_user=settings.spark_run_as_user,
        run_as_group=settings.spark_run_as_group,
        main_file=HOST_APPLICATION_FILE,
        arguments=host_arguments(application_selector(name), settings),
        driver=spec.driver,
        executor_instances=spec.executor.instances,
        executor=SparkResources(cores=spec.executor.cores, memory=spec.executor.memory),
        spark_conf=app_spark_conf(spec.spark_conf, scheduling_conf(spec)),
        config_map=None,
        secrets=sorted(
            {b for config in ordered for b in secret_bindings(config.spec)}
            | {b for group in followed_groups(ordered, groups or {}) for b in secret_bindings(group)}
        ),
        config_map_files=sorted({f for config in ordered for f in config_map_files(config.spec)}),
        checkpoint_claims=sorted(claims),
        optional_references=True,
        metrics_port=settings.app_metrics_port,
        workload_identities=[use for config in ordered for use in workload_identities(config.spec)],
    )
    return ApplicationPlan(spec.launcher or settings.launcher, app)


def host_arguments(selector: str, settings: OperatorSettings) -> list[str]:
    """The host's arguments: the task ConfigMaps ``selector`` names, and the status endpoint, which answers
    before any task runs (each task config names the same port)."""
    return ["--task-configmaps", selector, "--metrics-port", str(settings.app_metrics_port)]


def followed_groups(
    members: Sequence[TaskConfig], groups: Mapping[str, FailoverGroupSpec]
) -> list[FailoverGroupSpec]:
    """The FailoverGroups (among ``groups``) that the members follow, each once, in name order."""
    return [groups[name] for name in followed_group_names(members) if name in groups]


def followed_group_names(members: Sequence[TaskConfig]) -> list[str]:
    """The names of the FailoverGroups the members follow, each once."""
    return sorted(
        {member.split("/", 1)[0] for config in members for member in config.followed_members.values()}
    )


def scheduling_conf(spec: ReplicationApplicationSpec) -> dict[str, str]:
    """FAIR: the driver runs the batches of members keeping up ahead of those of members catching up a
    backlog (`federator_spark.pools`), so a task catching up does not hold the others' batches back. FIFO
    is Spark's default."""
    return {"spark.scheduler.mode": spec.scheduling.mode}


def _refuse_outside_pod_policy(spec: ReplicationApplicationSpec, settings: OperatorSettings) -> None:
    """The installer's pod policy, as for a task's runtime (validation/pod_policy.py), at `spec.<field>`."""
    settings_only = Runtime(
        image=spec.image, service_account_name=spec.service_account_name, spark_conf=spec.spark_conf
    )
    findings = PodPolicy.from_settings(settings).findings(settings_only, at=())
    if findings:
        raise PlanningError(
            findings[0].reason,
            "; ".join(f"{join_path(['spec', *f.path])}: {f.message}" for f in findings),
        )


def missing_application(application: str) -> PlanningError:
    """A member whose application does not exist: named at its field."""
    return PlanningError(
        reasons.APPLICATION_NOT_FOUND,
        f"spec.runtime.applicationRef.name: ReplicationApplication {application!r} does not exist in the "
        "task's namespace; create it, or remove applicationRef to run the task in a Spark application "
        "of its own",
    )
