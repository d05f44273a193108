"""Pod-level pieces both launchers need: secret env vars, the task config, the ConfigMap keys editors
read, and checkpoint volumes."""

from __future__ import annotations

from typing import Any

from federator.planning.task import CHECKPOINT_MOUNT, CONFIG_MAP_DIR, TASK_CONFIG_DIR, SparkAppPlan

TASK_VOLUME = "federator-task"
CHECKPOINT_VOLUME = "federator-checkpoint"
CONFIG_MAP_VOLUME = "federator-config-map-{}"  # numbered: ConfigMap names can exceed a volume name


def _config_maps(plan: SparkAppPlan) -> dict[str, list[str]]:
    """ConfigMap name → the keys editors read from it, in the plan's (sorted) order."""
    found: dict[str, list[str]] = {}
    for file in plan.config_map_files:
        found.setdefault(file.config_map, []).append(file.key)
    return found


def secret_env(plan: SparkAppPlan) -> list[dict[str, Any]]:
    """Env vars whose values the kubelet takes from Secrets; the resource holds only names."""
    return [
        {"name": b.env_var, "valueFrom": {"secretKeyRef": {"name": b.secret_name, "key": b.key}}}
        for b in plan.secrets
    ]


def volumes(plan: SparkAppPlan) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [{"name": TASK_VOLUME, "configMap": {"name": plan.config_map}}]
    for index, (name, keys) in enumerate(_config_maps(plan).items()):
        items = [{"key": key, "path": key} for key in keys]
        found.append({"name": CONFIG_MAP_VOLUME.format(index), "configMap": {"name": name, "items": items}})
    if plan.checkpoint_pvc is not None:
        found.append(
            {
                "name": CHECKPOINT_VOLUME,
                "persistentVolumeClaim": {"claimName": plan.checkpoint_pvc.claim_name},
            }
        )
    return found


def volume_mounts(plan: SparkAppPlan) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [{"name": TASK_VOLUME, "mountPath": TASK_CONFIG_DIR, "readOnly": True}]
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
    return mounts
