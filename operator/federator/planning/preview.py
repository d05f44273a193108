"""The GitOps preview: for each manifest, exactly the objects the operator would create in a cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from federator.api.replicationtask import ReplicationTaskSpec
from federator.api.servicebusmirror import ServiceBusMirrorSpec
from federator.planning.errors import PlanningError
from federator.planning.launchers import render_spark_application
from federator.planning.mirror import plan_mirror
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation import validate_object
from federator.validation.documents import Document


@dataclass
class Preview:
    """The children of one manifest, or why there are none."""

    label: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    provisioning: dict[str, Any] | None = None
    """What is provisioned outside Kubernetes (Service Bus subscriptions, rules, queues)."""
    reason: str | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


# Kinds whose planning later issues add; until then the preview says so instead of guessing.
NOT_YET_PLANNED = {"FailoverGroup": "issue #6"}


def preview_document(doc: Document, settings: OperatorSettings) -> Preview | None:
    """None for documents that are not Federator resources."""
    kind, problems = validate_object(doc.body)
    if kind is None and not problems:
        return None
    if problems:
        detail = "; ".join(str(p) for p in problems)
        return Preview(doc.label, reason="InvalidSpec", message=detail)
    assert kind is not None
    if kind.kind in NOT_YET_PLANNED:
        return Preview(
            doc.label,
            reason="NotBuiltYet",
            message=f"planning {kind.kind} is not built yet ({NOT_YET_PLANNED[kind.kind]})",
        )
    meta = doc.body["metadata"]
    if kind.kind == "ServiceBusMirror":
        mirror = plan_mirror(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            spec=ServiceBusMirrorSpec.model_validate(doc.body["spec"]),
            uid=meta.get("uid"),
        )
        return Preview(doc.label, mirror.tasks, provisioning=mirror.provisioning())
    spec = ReplicationTaskSpec.model_validate(doc.body["spec"])
    try:
        plan = plan_replication_task(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            spec=spec,
            settings=settings,
            uid=meta.get("uid"),
            generation=meta.get("generation"),
        )
    except PlanningError as err:
        return Preview(doc.label, reason=err.reason, message=err.message)
    return Preview(doc.label, [plan.config_map, render_spark_application(plan.launcher, plan.spark_app)])
