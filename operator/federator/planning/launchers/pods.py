"""Pod-level pieces both launchers need: secret env vars, the task config and checkpoint volumes."""

from __future__ import annotations

from typing import Any

from federator.planning.task import CHECKPOINT_MOUNT, TASK_CONFIG_DIR, SparkAppPlan

TASK_VOLUME = "federator-task"
CHECKPOINT_VOLUME = "federator-checkpoint"


def secret_env(plan: SparkAppPlan) -> list[dict[str, Any]]:
    """Env vars whose values the kubelet takes from Secrets; the resource holds only names."""
    return [
        {"name": b.env_var, "valueFrom": {"secretKeyRef": {"name": b.secret_name, "key": b.key}}}
        for b in plan.secrets
    ]


def volumes(plan: SparkAppPlan) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [{"name": TASK_VOLUME, "configMap": {"name": plan.config_map}}]
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
