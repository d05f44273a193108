"""What a task's Spark pods need from their namespace, checked before they exist: the service account that
workload identity signs them in as, and a checkpoint claim every pod can mount. The pass reads each object
once (replicationtask_inputs.py); these functions judge it without I/O."""

from __future__ import annotations

from typing import Any

from federator import reasons
from federator.planning.task import SparkAppPlan
from federator.status import conditions as cond

# The service account annotation the AKS workload identity webhook turns into AZURE_CLIENT_ID.
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
CHECKPOINT_VOLUME_SHARED = "CheckpointVolumeShared"
READ_WRITE_MANY = "ReadWriteMany"


def judge_service_account(
    plan: SparkAppPlan, account: dict[str, Any] | None, field: str = "spec.runtime.serviceAccountName"
) -> tuple[str, str] | None:
    """(Stalled reason, message) when the pods could not sign in with workload identity under `account`
    (their ServiceAccount as stored); None when they can, or use none. ``field`` names the account."""
    if not plan.workload_identities:
        return None
    where = f"ServiceAccount {plan.namespace}/{plan.service_account}"
    users = ", ".join(use.path for use in plan.workload_identities)
    if account is None:
        return reasons.SERVICE_ACCOUNT_NOT_FOUND, (
            f"{where} does not exist; the Spark pods run under it and sign in as its workload identity "
            f"({users}). Create it, or set {field}"
        )
    annotations = (account.get("metadata") or {}).get("annotations") or {}
    annotated = annotations.get(CLIENT_ID_ANNOTATION, "").strip()
    if not annotated:
        return reasons.WORKLOAD_IDENTITY_CLIENT_ID_MISSING, (
            f"{where} has no annotation {CLIENT_ID_ANNOTATION}, so the workload identity webhook gives "
            f"the pods no identity to sign in as ({users}); annotate it with the managed identity's client ID"
        )
    for use in plan.workload_identities:
        if use.client_id is not None and use.client_id.lower() != annotated.lower():
            return reasons.WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH, (
                f"{use.path} names clientId {use.client_id}, but {where} is annotated "
                f"{CLIENT_ID_ANNOTATION}={annotated}: the pods get the service account's identity. Make "
                "them the same (or leave clientId out to use the annotation)"
            )
    return None


def judge_checkpoint_claim(name: str, executors: int, claim: dict[str, Any] | None) -> cond.ConditionUpdate:
    """``name`` is `namespace/claim`. Every task has executors (spec.runtime.executor.instances >= 1), and
    they mount the checkpoint as the driver does."""
    where = f"PersistentVolumeClaim {name}"
    pods = f"the driver and {executors} executor(s)"
    if claim is None:
        return cond.ConditionUpdate(
            CHECKPOINT_VOLUME_SHARED,
            "Unknown",
            reasons.CHECKPOINT_VOLUME_NOT_FOUND,
            f"{where} does not exist: {pods} stay Pending until it does. Create it ReadWriteMany "
            "(on AKS: storage class azurefile-csi or azurefile-csi-premium)",
        )
    # A bound claim's status says what its volume gives; before binding, the spec says what was asked.
    status, spec = claim.get("status") or {}, claim.get("spec") or {}
    modes: list[str] = status.get("accessModes") or spec.get("accessModes") or []
    if READ_WRITE_MANY in modes:
        return cond.ConditionUpdate(
            CHECKPOINT_VOLUME_SHARED,
            "True",
            reasons.CHECKPOINT_VOLUME_SHARED,
            f"{where} is ReadWriteMany: {pods} can mount it from any node",
        )
    if modes == ["ReadWriteOncePod"]:
        consequence = "only one pod can mount it, so the others never start"
    else:
        consequence = (
            "all of them mount it (commit records, the Service Bus spool, editor state), so they must run "
            "on one node: a pod scheduled on another cannot start"
        )
    return cond.ConditionUpdate(
        CHECKPOINT_VOLUME_SHARED,
        "False",
        reasons.CHECKPOINT_VOLUME_NOT_SHARED,
        f"{where} is {', '.join(modes) or 'without access modes'}, not ReadWriteMany, and {pods} use it: "
        f"{consequence}. Use a ReadWriteMany claim (on AKS: storage class azurefile-csi or "
        "azurefile-csi-premium; Azure Disk is ReadWriteOnce)",
    )
