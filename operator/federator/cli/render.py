"""The GitOps preview: for each manifest, exactly the objects the operator would create in a cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from federator import reasons
from federator.failover.publishing import dns_record_sets, endpoints_config_map
from federator.failover.state import GroupState, step
from federator.planning.application import MemberPlan, application_name, plan_application, plan_member_task
from federator.planning.errors import PlanningError
from federator.planning.following import Following
from federator.planning.launchers import render_spark_application
from federator.planning.mirror import plan_mirror
from federator.planning.task import Owner, plan_replication_task, task_arguments
from federator.settings import OperatorSettings
from federator.validation import Problem, Verdict, check_document
from federator.validation.documents import Document
from federator_contract.api.base import API_VERSION
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import REPLICATION_APPLICATION, REPLICATION_TASK
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.taskconfig import TaskConfig


@dataclass
class Preview:
    """The children of one manifest, or why there are none."""

    label: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    provisioning: dict[str, Any] | None = None
    """What is provisioned outside Kubernetes (Service Bus subscriptions, rules, queues; DNS records)."""
    provisioning_title: str = "Service Bus provisioning plan"
    reason: str | None = None
    message: str | None = None
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reason is None


SINCE_PLACEHOLDER = "<the time of the switch>"


Members = Mapping[tuple[str, str], Sequence[TaskConfig]]
"""(namespace, ReplicationApplication) → the task configs of its members among the documents."""


def preview_documents(docs: Sequence[Document], settings: OperatorSettings) -> list[Preview]:
    """The previews of documents rendered together: a ReplicationApplication's Spark application is
    rendered with the member tasks (`spec.runtime.applicationRef`) among them, as the operator would once
    they are all applied."""
    verdicts = [(doc, check_document(doc)) for doc in docs]
    members = member_configs([v.admitted for _, v in verdicts if v.ours and not v.problems], settings)
    previews = [_from_verdict(doc, verdict, settings, members) for doc, verdict in verdicts]
    return [p for p in previews if p is not None]


def preview_document(doc: Document, settings: OperatorSettings) -> Preview | None:
    """None for documents that are not Federator resources. Refuses exactly what `federator validate`
    refuses; plans the object as the API server would store it (nulls pruned, defaults applied). A
    ReplicationApplication alone has no members (`preview_documents` renders it with them)."""
    return _from_verdict(doc, check_document(doc), settings, {})


def _from_verdict(
    doc: Document, verdict: Verdict, settings: OperatorSettings, members: Members
) -> Preview | None:
    if not verdict.ours:
        return None
    if verdict.problems or verdict.kind is None or verdict.admitted is None:
        detail = "; ".join(str(p) for p in verdict.problems)
        return Preview(doc.label, reason=reasons.INVALID_SPEC, message=detail)
    preview = _preview(doc.label, verdict.kind.kind, verdict.admitted, settings, members)
    preview.warnings = verdict.warnings
    return preview


def member_configs(bodies: Sequence[dict[str, Any] | None], settings: OperatorSettings) -> Members:
    """The task config of each admitted member task among ``bodies``, by its application. A member that
    cannot be planned is left out (its own preview says why)."""
    found: dict[tuple[str, str], list[TaskConfig]] = {}
    for body in bodies:
        if body is None or body.get("kind") != REPLICATION_TASK.kind:
            continue
        spec = ReplicationTaskSpec.model_validate(body["spec"])
        meta = body["metadata"]
        if application_name(spec) is None:
            continue
        try:
            member = _member(meta, spec, settings)
        except PlanningError:
            continue
        found.setdefault((member.task_config.namespace, member.application), []).append(member.task_config)
    return found


def _member(meta: dict[str, Any], spec: ReplicationTaskSpec, settings: OperatorSettings) -> MemberPlan:
    return plan_member_task(**task_arguments(meta, Following(spec), settings))


def _preview(
    label: str, kind: str, body: dict[str, Any], settings: OperatorSettings, members: Members
) -> Preview:
    meta = body["metadata"]
    if kind == REPLICATION_APPLICATION.kind:
        return _application(
            label, meta, ReplicationApplicationSpec.model_validate(body["spec"]), settings, members
        )
    if kind == "FailoverGroup":
        return _failover_group(label, meta, FailoverGroupSpec.model_validate(body["spec"]))
    if kind == "ServiceBusMirror":
        mirror = plan_mirror(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            spec=ServiceBusMirrorSpec.model_validate(body["spec"]),
            uid=meta.get("uid"),
            shared_application=True,
        )
        owned = [mirror.application] if mirror.application is not None else []
        return Preview(label, [*owned, *mirror.tasks], provisioning=mirror.provisioning())
    spec = ReplicationTaskSpec.model_validate(body["spec"])
    if application_name(spec) is not None:
        try:
            return Preview(label, [_member(meta, spec, settings).config_map])
        except PlanningError as err:
            return Preview(label, reason=err.reason, message=err.message)
    try:
        plan = plan_replication_task(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            spec=spec,
            settings=settings,
            uid=meta.get("uid"),
            generation=meta.get("generation"),
            annotations=meta.get("annotations"),
        )
    except PlanningError as err:
        return Preview(label, reason=err.reason, message=err.message)
    return Preview(label, [plan.config_map, render_spark_application(plan.launcher, plan.spark_app)])


def _application(
    label: str,
    meta: dict[str, Any],
    spec: ReplicationApplicationSpec,
    settings: OperatorSettings,
    members: Members,
) -> Preview:
    """The application's Spark application, with its members among the documents rendered together."""
    namespace = meta.get("namespace", "default")
    try:
        plan = plan_application(
            name=meta["name"],
            namespace=namespace,
            spec=spec,
            members=members.get((namespace, meta["name"]), ()),
            settings=settings,
            uid=meta.get("uid"),
        )
    except PlanningError as err:
        return Preview(label, reason=err.reason, message=err.message)
    return Preview(label, [render_spark_application(plan.launcher, plan.spark_app)])


def _failover_group(label: str, meta: dict[str, Any], spec: FailoverGroupSpec) -> Preview:
    """What the group publishes once it starts: the endpoints ConfigMap (and DNS records) for the member
    `spec.activeMember` names, default the primary. The switch times are only known then."""
    start = step(spec, GroupState(), {}, None, datetime.now(UTC)).state
    name, namespace = meta["name"], meta.get("namespace", "default")
    owner = Owner(API_VERSION, "FailoverGroup", name, meta["uid"]) if meta.get("uid") else None
    config_map = endpoints_config_map(name, namespace, spec, start, owner, since=lambda _: SINCE_PLACEHOLDER)
    records = dns_record_sets(spec, start)
    if spec.publishing.dns is None:
        return Preview(label, [config_map])
    zone = spec.publishing.dns.zone
    dns = {
        "zone": zone.zone_name,
        "resourceGroup": zone.resource_group,
        "recordSets": [
            {"name": r.name, "type": r.type, "ttl": r.ttl, "cname": r.cname}
            if r.type == "CNAME"
            else {
                "name": r.name,
                "type": r.type,
                "ttl": r.ttl,
                "srv": [{"priority": p, "weight": w, "port": port, "target": t} for p, w, port, t in r.srv],
            }
            for r in records
        ],
    }
    return Preview(label, [config_map], provisioning=dns, provisioning_title="Azure DNS record sets")
