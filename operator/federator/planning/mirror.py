"""A ServiceBusMirror → the Service Bus subscriptions, rules and queues to provision on its members, and
the ReplicationTasks that move the messages (owned by the mirror). In a cluster the tasks share one Spark
application: the ReplicationApplication the task template names, or else one the mirror owns, named after
it, which takes the template's launcher, image, service account, resources and Spark settings (the tasks
keep their query settings)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from federator.planning.names import bounded
from federator.planning.task import Owner
from federator_contract.api.base import API_VERSION, QueueOrSubscription
from federator_contract.api.replicationapplication import APPLICATION_FIELDS
from federator_contract.api.servicebusmirror import MirrorMember, ServiceBusMirrorSpec
from federator_contract.sql import format_timespan

MIRROR_LABEL = "federator.io/servicebusmirror"  # on what a mirror generates
TASK_NAME_LIMIT = 50  # ReplicationTask names (their Spark driver pods add a suffix)
SUBSCRIPTION_NAME_LIMIT = 50  # Service Bus
REPLICATION_RULE = "replication"
DEFAULT_RULE = "$Default"


@dataclass(frozen=True)
class RulePlan:
    name: str
    sql_filter: str
    sql_action: str | None = None


@dataclass(frozen=True)
class SubscriptionPlan:
    """A replication subscription Federator creates and owns on a member's topic."""

    member: str
    topic: str
    name: str
    rules: tuple[RulePlan, ...]
    owner_marker: str
    """Stored in the subscription's user metadata: Federator never touches subscriptions without it."""


@dataclass(frozen=True)
class QueuePlan:
    member: str
    name: str
    owner_marker: str


@dataclass(frozen=True)
class Pair:
    """One generated ReplicationTask and the members it copies between."""

    source: str
    target: str
    task: dict[str, Any]

    @property
    def task_name(self) -> str:
        return str(self.task["metadata"]["name"])


@dataclass
class MirrorPlan:
    subscriptions: list[SubscriptionPlan] = field(default_factory=list)
    queues: list[QueuePlan] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    application: dict[str, Any] | None = None
    """The ReplicationApplication the mirror owns for its tasks; None when the template names one (or the
    plan is local mode's, whose mirror runs its tasks in one host of its own)."""

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """The generated ReplicationTasks, one per pair."""
        return [pair.task for pair in self.pairs]

    def provisioning(self) -> dict[str, Any]:
        """The Service Bus part as plain data (for `federator render`)."""
        return {
            "subscriptions": [
                {
                    "member": s.member,
                    "topic": s.topic,
                    "name": s.name,
                    "removeRules": [DEFAULT_RULE],
                    "rules": [
                        {
                            "name": r.name,
                            "sqlFilter": r.sql_filter,
                            **({"sqlAction": r.sql_action} if r.sql_action else {}),
                        }
                        for r in s.rules
                    ],
                    "userMetadata": s.owner_marker,
                }
                for s in self.subscriptions
            ],
            "queues": [
                {"member": q.member, "name": q.name, "userMetadata": q.owner_marker} for q in self.queues
            ],
        }


def property_reference(name: str) -> str:
    """A user property as the SQL grammar reads it: bare when it is a plain identifier, else bracketed."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"[{name}]"


def plan_mirror(
    *,
    name: str,
    namespace: str,
    spec: ServiceBusMirrorSpec,
    uid: str | None = None,
    shared_application: bool = False,
) -> MirrorPlan:
    """Everything the mirror provisions and generates. Pure; the same spec always gives the same plan.
    ``shared_application`` (a cluster): the tasks run in the ReplicationApplication the template names, or
    in one the mirror owns (`MirrorPlan.application`)."""
    owner = Owner(API_VERSION, "ServiceBusMirror", name, uid) if uid else None
    marker = f"federator.io/servicebusmirror={namespace}/{name}"
    members = {m.name: m for m in spec.members}
    template, application = task_template(name, namespace, spec, owner, shared_application)
    plan = MirrorPlan(application=application)
    match spec.pattern:
        case "allActive":
            pairs = [(a, b) for a in members for b in members if a != b]
            _replicate_topics(plan, name, namespace, spec, template, members, pairs, marker, owner, ttl=None)
        case "activePassive":
            assert spec.active_passive is not None  # the CRD's CEL rule guarantees it
            primary = spec.active_passive.primary_member
            pairs = [(primary, b) for b in members if b != primary]
            ttl = timedelta(seconds=spec.active_passive.time_to_live_seconds)
            _replicate_topics(plan, name, namespace, spec, template, members, pairs, marker, owner, ttl=ttl)
        case "spillover":
            _spill(plan, name, namespace, spec, template, members, marker, owner)
    return plan


def _replicate_topics(
    plan: MirrorPlan,
    name: str,
    namespace: str,
    spec: ServiceBusMirrorSpec,
    template: dict[str, Any],
    members: dict[str, MirrorMember],
    pairs: list[tuple[str, str]],
    marker: str,
    owner: Owner | None,
    ttl: timedelta | None,
) -> None:
    assert spec.topic_name is not None  # the CRD's CEL rule guarantees it
    prop = property_reference(spec.replication_property)
    # `$Default` (1=1) is removed: it would deliver an unmarked copy to the peer, which would bounce back.
    action = f"SET {prop} = 1" + (f"; SET sys.TimeToLive = '{format_timespan(ttl)}'" if ttl else "")
    for source, target in pairs:
        subscription = bounded(f"repl-{target}", SUBSCRIPTION_NAME_LIMIT)
        plan.subscriptions.append(
            SubscriptionPlan(
                member=source,
                topic=spec.topic_name,
                name=subscription,
                rules=(RulePlan(REPLICATION_RULE, f"{prop} IS NULL", action),),
                owner_marker=marker,
            )
        )
        task_spec = {
            "source": {
                "serviceBus": {
                    "connection": _connection(members[source]),
                    "topicName": spec.topic_name,
                    "subscriptionName": subscription,
                }
            },
            "targets": [
                {
                    "name": target,
                    "serviceBus": {"connection": _connection(members[target]), "topicName": spec.topic_name},
                }
            ],
        }
        plan.pairs.append(
            Pair(source, target, _task(name, namespace, template, source, target, task_spec, owner))
        )


def _spill(
    plan: MirrorPlan,
    name: str,
    namespace: str,
    spec: ServiceBusMirrorSpec,
    template: dict[str, Any],
    members: dict[str, MirrorMember],
    marker: str,
    owner: Owner | None,
) -> None:
    assert spec.spillover is not None  # the CRD's CEL rule guarantees it
    settings = spec.spillover
    spilled = property_reference(settings.marker_property)
    left, right = list(members)
    for member in (left, right):
        plan.queues.append(QueuePlan(member, settings.auxiliary_queue_name, marker))
    for index, entity in enumerate(settings.entities):
        for source, target in ((left, right), (right, left)):
            task_spec = {
                "source": {
                    "serviceBus": {"connection": _connection(members[source]), **_dead_letters(entity)}
                },
                # Spilled once: to the peer, marked. Dead-lettered again: to the local auxiliary queue,
                # never back to where it came from.
                "targets": [
                    {
                        "name": "peer",
                        "condition": f"{spilled} IS NULL",
                        "serviceBus": {"connection": _connection(members[target]), **_destination(entity)},
                        "setProperties": {settings.marker_property: "1"},
                    }
                ],
                "unrouted": {
                    "serviceBus": {
                        "connection": _connection(members[source]),
                        "queueName": settings.auxiliary_queue_name,
                    }
                },
            }
            suffix = f"-{index}" if len(settings.entities) > 1 else ""
            task = _task(name, namespace, template, source, target + suffix, task_spec, owner)
            plan.pairs.append(Pair(source, target, task))


def _dead_letters(entity: QueueOrSubscription) -> dict[str, Any]:
    if entity.queue_name is not None:
        return {"queueName": entity.queue_name, "subQueue": "deadLetter"}
    return {
        "topicName": entity.topic_name,
        "subscriptionName": entity.subscription_name,
        "subQueue": "deadLetter",
    }


def _destination(entity: QueueOrSubscription) -> dict[str, Any]:
    if entity.queue_name is not None:
        return {"queueName": entity.queue_name}
    return {"topicName": entity.topic_name}


def _connection(member: MirrorMember) -> dict[str, Any]:
    return member.connection.model_dump(by_alias=True, exclude_none=True, mode="json")


def task_template(
    mirror: str, namespace: str, spec: ServiceBusMirrorSpec, owner: Owner | None, shared_application: bool
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """What every generated task's spec gets from the template, and the ReplicationApplication the mirror
    owns for them (None: none). Without an `applicationRef` in the template, the application-level runtime
    fields move to the mirror's application and the tasks name it."""
    template = spec.task_template.model_dump(
        by_alias=True, exclude_defaults=True, exclude_none=True, mode="json"
    )
    runtime = dict(template.get("runtime") or {})
    if not shared_application or "applicationRef" in runtime:
        return template, None
    app_spec = {wire: runtime.pop(wire) for wire in APPLICATION_FIELDS.values() if wire in runtime}
    runtime["applicationRef"] = {"name": mirror}
    application = {
        "apiVersion": API_VERSION,
        "kind": "ReplicationApplication",
        "metadata": _generated_meta(mirror, mirror, namespace, owner),
        "spec": app_spec,
    }
    return {**template, "runtime": runtime}, application


def _generated_meta(name: str, mirror: str, namespace: str, owner: Owner | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "federator", MIRROR_LABEL: mirror},
    }
    if owner is not None:
        metadata["ownerReferences"] = [owner.reference()]
    return metadata


def _task(
    mirror: str,
    namespace: str,
    template: dict[str, Any],
    source: str,
    target: str,
    task_spec: dict[str, Any],
    owner: Owner | None,
) -> dict[str, Any]:
    name = bounded(f"{mirror}-{source}-{target}", TASK_NAME_LIMIT)
    return {
        "apiVersion": API_VERSION,
        "kind": "ReplicationTask",
        "metadata": _generated_meta(name, mirror, namespace, owner),
        "spec": {**task_spec, **template},
    }
