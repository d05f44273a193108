"""The driver and executor pod templates both launchers hand to Spark: secret env vars, the task config
(none for a shared application, whose driver reads its members' configs through the API), the ConfigMap
keys editors read, the checkpoint volume (a shared application's: each claim its members use, whole),
the RPC secret (rpc.py), and what Pod Security "restricted" asks of every pod (non-root with the image's
uid/gid, no privilege escalation, no capabilities, the runtime's seccomp profile, a read-only root
filesystem with emptyDir volumes where Spark and Python write).

Spark builds each pod from its template and adds only its own ConfigMap and emptyDir volumes, env vars
and container ports, so the pods keep what the template says (docs/launchers.md)."""

from __future__ import annotations

from typing import Any

from federator.planning.launchers.rpc import rpc_volume, rpc_volume_mount
from federator.planning.task import CHECKPOINT_MOUNT, CONFIG_MAP_DIR, TASK_CONFIG_DIR, SparkAppPlan

# The container names Spark looks for in the templates (both Spark operators pass Spark's defaults).
DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"
TASK_VOLUME = "federator-task"
CHECKPOINT_VOLUME = "federator-checkpoint"
CHECKPOINT_CLAIM_VOLUME = "federator-checkpoint-{}"  # a shared application's claims, numbered as below
CONFIG_MAP_VOLUME = "federator-config-map-{}"  # numbered: ConfigMap names can exceed a volume name
# Writable scratch on a read-only root: the JVM (native libraries it unpacks, perf data, the Unix domain
# sockets Python workers reach it through), Python's tempfile, the image entrypoint's user-name files,
# spark-submit's work files all use /tmp.
TMP_VOLUME = "tmp"
TMP_DIR = "/tmp"
# Spark takes container mounts of volumes named `spark-local-dir-*` as its local dirs (SPARK_LOCAL_DIRS:
# block manager, spills, state store working copies) instead of adding emptyDirs of its own.
LOCAL_DIR_VOLUME = "spark-local-dir-1"
LOCAL_DIR = "/var/data/spark-local-dir-1"


def pod_spec(plan: SparkAppPlan, container: str, ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The pod template's `spec` for the driver or an executor (``container`` is the name Spark looks
    for in the template)."""
    main: dict[str, Any] = {
        "name": container,
        # Relative writes land on the scratch volume too: an executor's SparkFiles root is its working
        # directory, and a JVM writes its crash log there.
        "workingDir": TMP_DIR,
        "env": secret_env(plan),
        "volumeMounts": volume_mounts(plan),
        "securityContext": container_security_context(),
    }
    if ports:
        main["ports"] = ports
    if container == DRIVER_CONTAINER:
        # A driver that fails says why in its last log lines (e.g. CheckpointSourceMismatch, with the remedy):
        # they become its termination message, which the launchers' status carries to the operator.
        main["terminationMessagePolicy"] = "FallbackToLogsOnError"
    return {
        "serviceAccountName": plan.service_account,
        # The driver creates and watches its executors with the account's API token; executors never call
        # the API server, so a process that breaks out of a task's code there gets no token to use. (The
        # workload identity webhook projects its own Azure-audience token whatever this says.)
        "automountServiceAccountToken": container == DRIVER_CONTAINER,
        "securityContext": pod_security_context(plan),
        "volumes": volumes(plan),
        "containers": [main],
    }


def metrics_port(plan: SparkAppPlan) -> dict[str, Any]:
    """The replication app's Prometheus port, declared on the driver container."""
    return {"name": "metrics", "containerPort": plan.metrics_port, "protocol": "TCP"}


def pod_security_context(plan: SparkAppPlan) -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": plan.run_as_user,
        "runAsGroup": plan.run_as_group,
        # Checkpoint volumes are written by the image's group; checked at the volume's root only, so a
        # large checkpoint is not walked (chown -R) at every pod start.
        "fsGroup": plan.run_as_group,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _config_maps(plan: SparkAppPlan) -> dict[str, list[str]]:
    """ConfigMap name → the keys editors read from it, in the plan's (sorted) order."""
    found: dict[str, list[str]] = {}
    for file in plan.config_map_files:
        found.setdefault(file.config_map, []).append(file.key)
    return found


def secret_env(plan: SparkAppPlan) -> list[dict[str, Any]]:
    """Env vars whose values the kubelet takes from Secrets; the resource holds only names."""
    optional = {"optional": True} if plan.optional_references else {}
    return [
        {"name": b.env_var, "valueFrom": {"secretKeyRef": {"name": b.secret_name, "key": b.key, **optional}}}
        for b in plan.secrets
    ]


def volumes(plan: SparkAppPlan) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [
        {"name": TMP_VOLUME, "emptyDir": {}},
        {"name": LOCAL_DIR_VOLUME, "emptyDir": {}},
        rpc_volume(),
    ]
    if plan.config_map is not None:
        found.insert(0, {"name": TASK_VOLUME, "configMap": {"name": plan.config_map}})
    optional = {"optional": True} if plan.optional_references else {}
    for index, (name, keys) in enumerate(_config_maps(plan).items()):
        items = [{"key": key, "path": key} for key in keys]
        found.append(
            {"name": CONFIG_MAP_VOLUME.format(index), "configMap": {"name": name, "items": items, **optional}}
        )
    if plan.checkpoint_pvc is not None:
        found.append(
            {
                "name": CHECKPOINT_VOLUME,
                "persistentVolumeClaim": {"claimName": plan.checkpoint_pvc.claim_name},
            }
        )
    for index, claim in enumerate(plan.checkpoint_claims):
        found.append(
            {"name": CHECKPOINT_CLAIM_VOLUME.format(index), "persistentVolumeClaim": {"claimName": claim}}
        )
    return found


def volume_mounts(plan: SparkAppPlan) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": TMP_VOLUME, "mountPath": TMP_DIR},
        {"name": LOCAL_DIR_VOLUME, "mountPath": LOCAL_DIR},
        rpc_volume_mount(),
    ]
    if plan.config_map is not None:
        mounts.insert(0, {"name": TASK_VOLUME, "mountPath": TASK_CONFIG_DIR, "readOnly": True})
    for index, name in enumerate(_config_maps(plan)):
        mounts.append(
            {
                "name": CONFIG_MAP_VOLUME.format(index),
                "mountPath": f"{CONFIG_MAP_DIR}/{name}",
                "readOnly": True,
            }
        )
    if plan.checkpoint_pvc is not None:
        # Executors mount it too: stateful editors (dedupe) keep their state store under the checkpoint.
        mounts.append(
            {
                "name": CHECKPOINT_VOLUME,
                "mountPath": CHECKPOINT_MOUNT,
                "subPath": plan.checkpoint_pvc.sub_path,
            }
        )
    for index, claim in enumerate(plan.checkpoint_claims):
        mounts.append(
            {"name": CHECKPOINT_CLAIM_VOLUME.format(index), "mountPath": f"{CHECKPOINT_MOUNT}/{claim}"}
        )
    return mounts
