"""Desired vs. actual for one member → the writes that close the gap. Pure.

Ownership: Federator only ever changes or deletes an entity whose user metadata carries the mirror's
marker (it writes the marker when it creates one). A subscription it would create that exists without the
marker is someone else's: it is reported (EntityNotOwned) and left alone. An auxiliary queue that exists
without the marker is used as it is, and never deleted. Entity names compare case-insensitively, as in
Service Bus."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from federator.planning.mirror import RulePlan, SubscriptionPlan
from federator.provision.model import (
    DEFAULT_RULE,
    CreateQueue,
    CreateSubscription,
    DeleteQueue,
    DeleteRule,
    DeleteSubscription,
    Desired,
    Observed,
    ObservedSubscription,
    Operation,
    PutRule,
    parse_path,
    queue_path,
    subscription_path,
)

T = TypeVar("T")


@dataclass
class Diff:
    operations: list[Operation] = field(default_factory=list)
    """In a safe order: a subscription gets its rules before `$Default` goes, and a rule is replaced before
    extra rules are removed, so it never has no rule at all (it would silently receive nothing)."""
    drift: list[str] = field(default_factory=list)
    """Changes made by hand to what the mirror owns, in words (each is repaired by `operations`)."""
    missing_topics: list[str] = field(default_factory=list)
    not_owned: list[str] = field(default_factory=list)
    """Paths of subscriptions the mirror would create that exist and belong to someone else."""
    entities: list[str] = field(default_factory=list)
    """Paths the mirror owns once `operations` are done (what status records, and deletion removes)."""


def targets(desired: Desired, recorded: Iterable[str]) -> tuple[list[str], list[str]]:
    """The topics and queues to observe: those planned, and those the mirror recorded owning before."""
    topics = [s.topic for s in desired.subscriptions]
    queues = [q.name for q in desired.queues]
    for path in recorded:
        parsed = parse_path(path)
        if parsed is not None and len(parsed) == 2:
            topics.append(parsed[0])
        elif parsed is not None:
            queues.append(parsed[0])
    return _unique(topics), _unique(queues)


def diff(desired: Desired, observed: Observed, recorded: Iterable[str] = ()) -> Diff:
    """What to write so that the member has exactly what `desired` says, of what the mirror owns."""
    result = Diff()
    was_recorded = {p.casefold() for p in recorded}
    planned_subscriptions = {(s.topic.casefold(), s.name.casefold()) for s in desired.subscriptions}
    for plan in desired.subscriptions:
        _subscription(result, plan, desired.marker, observed, was_recorded)
    for topic, subscriptions in observed.topics.items():
        for sub in subscriptions or ():
            planned = (topic.casefold(), sub.name.casefold()) in planned_subscriptions
            if not planned and sub.user_metadata == desired.marker:
                result.operations.append(DeleteSubscription(topic, sub.name))
    planned_queues = {q.name.casefold() for q in desired.queues}
    for queue in desired.queues:
        found = _lookup(observed.queues, queue.name)
        path = queue_path(queue.name)
        if found is None:
            result.operations.append(CreateQueue(queue.name, desired.marker))
            result.entities.append(path)
            if path.casefold() in was_recorded:
                result.drift.append(f"queue {queue.name} was deleted")
        elif found.user_metadata == desired.marker:
            result.entities.append(path)
    for name, found in observed.queues.items():
        owned = found is not None and found.user_metadata == desired.marker
        if owned and found is not None and name.casefold() not in planned_queues:
            result.operations.append(DeleteQueue(found.name))
    return result


def _subscription(
    result: Diff, plan: SubscriptionPlan, marker: str, observed: Observed, was_recorded: set[str]
) -> None:
    path = subscription_path(plan.topic, plan.name)
    if plan.topic not in observed.topics or observed.topics[plan.topic] is None:
        result.missing_topics.append(plan.topic)
        return
    found = next(
        (s for s in observed.topics[plan.topic] or () if s.name.casefold() == plan.name.casefold()), None
    )
    if found is not None and found.user_metadata != marker:
        result.not_owned.append(path)
        return
    result.entities.append(path)
    if found is None:
        if path.casefold() in was_recorded:
            result.drift.append(f"subscription {plan.name} on topic {plan.topic} was deleted")
        result.operations.append(CreateSubscription(plan.topic, plan.name, marker))
        result.operations += [PutRule(plan.topic, plan.name, rule, exists=False) for rule in plan.rules]
        result.operations.append(DeleteRule(plan.topic, plan.name, DEFAULT_RULE))
        return
    _rules(result, plan, found)


def _rules(result: Diff, plan: SubscriptionPlan, found: ObservedSubscription) -> None:
    actual = {r.name.casefold(): r for r in found.rules or ()}
    where = f"{plan.topic}/{found.name}"
    for rule in plan.rules:
        current = actual.get(rule.name.casefold())
        if current is None:
            result.drift.append(f"rule {rule.name} of {where} was deleted")
            result.operations.append(PutRule(plan.topic, found.name, rule, exists=False))
        elif not _same_rule(current, rule):
            result.drift.append(f"rule {rule.name} of {where} was changed")
            result.operations.append(PutRule(plan.topic, found.name, rule, exists=True))
    wanted = {r.name.casefold() for r in plan.rules}
    for key, rule in actual.items():
        if key not in wanted:
            result.drift.append(f"rule {rule.name} was added to {where}")
            result.operations.append(DeleteRule(plan.topic, found.name, rule.name))


def _same_rule(actual: RulePlan, desired: RulePlan) -> bool:
    return (actual.sql_filter.strip(), (actual.sql_action or "").strip()) == (
        desired.sql_filter.strip(),
        (desired.sql_action or "").strip(),
    )


def _lookup(items: dict[str, T | None], name: str) -> T | None:
    return next((v for k, v in items.items() if k.casefold() == name.casefold()), None)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.casefold(), name)
    return list(seen.values())
