"""Entity operations shared by ARM and ATOM, run on the emulator thread.

Each function takes the ``NamespaceState`` and returns plain views (immutable configs and
counts) that the HTTP thread may serialize safely. ``Put`` says what a PUT may do: ARM
upserts; ATOM creates (409 if present) or, with ``If-Match: *``, updates (404 if absent).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from federator_contract.emulatorconfig import QueueConfig, RuleConfig, SubscriptionConfig, TopicConfig
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.namespace import EntityExists, NamespaceState
from federator_emulator.state.servicebus import MessageState, ReceivableEntity
from federator_emulator.state.topics import Subscription


class Put(enum.Enum):
    UPSERT = "upsert"
    CREATE = "create"
    UPDATE = "update"


@dataclass(frozen=True)
class Counts:
    """Message counts as Azure reports them; locked and deferred messages count as active."""

    active: int = 0
    dead_letter: int = 0
    scheduled: int = 0
    size_bytes: int = 0

    @property
    def total(self) -> int:
        return self.active + self.dead_letter + self.scheduled

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.active + other.active,
            self.dead_letter + other.dead_letter,
            self.scheduled + other.scheduled,
            self.size_bytes + other.size_bytes,
        )


@dataclass(frozen=True)
class QueueView:
    config: QueueConfig
    counts: Counts


@dataclass(frozen=True)
class TopicView:
    config: TopicConfig
    subscription_count: int
    counts: Counts  # summed over the subscriptions


@dataclass(frozen=True)
class SubscriptionView:
    topic: str
    config: SubscriptionConfig
    counts: Counts


def _counts(entity: ReceivableEntity, dead_letter: ReceivableEntity) -> Counts:
    scheduled = sum(1 for m in entity.messages.values() if m.state is MessageState.SCHEDULED)
    return Counts(
        active=len(entity.messages) - scheduled,
        dead_letter=len(dead_letter.messages),
        scheduled=scheduled,
        size_bytes=sum(len(m.payload) for e in (entity, dead_letter) for m in e.messages.values()),
    )


def _check_put(exists: bool, mode: Put, what: str) -> None:
    if exists and mode is Put.CREATE:
        raise EntityExists(f"{what} already exists")
    if not exists and mode is Put.UPDATE:
        raise UnknownEntity(f"{what} not found")


# -- queues ------------------------------------------------------------------------------------
def queue_view(state: NamespaceState, name: str) -> QueueView:
    queue = state.queue(name)
    return QueueView(queue.config, _counts(queue, queue.dead_letter))


def list_queues(state: NamespaceState) -> list[QueueView]:
    return [queue_view(state, q.config.name) for q in state.queues.values()]


def put_queue(state: NamespaceState, config: QueueConfig, mode: Put) -> tuple[bool, QueueView]:
    """Create or update; returns (created, view)."""
    exists = config.name.lower() in state.queues
    _check_put(exists, mode, f"queue {config.name!r}")
    if exists:
        state.update_queue(config.model_copy(update={"name": state.queue(config.name).config.name}))
    else:
        state.create_queue(config)
    return not exists, queue_view(state, config.name)


# -- topics ------------------------------------------------------------------------------------
def topic_view(state: NamespaceState, name: str) -> TopicView:
    topic = state.topic(name)
    total = Counts()
    for sub in topic.subscriptions.values():
        total += _counts(sub, sub.dead_letter)
    return TopicView(topic.config, len(topic.subscriptions), total)


def list_topics(state: NamespaceState) -> list[TopicView]:
    return [topic_view(state, t.name) for t in state.topics.values()]


def put_topic(state: NamespaceState, config: TopicConfig, mode: Put) -> tuple[bool, TopicView]:
    exists = config.name.lower() in state.topics
    _check_put(exists, mode, f"topic {config.name!r}")
    if exists:
        state.update_topic(config.model_copy(update={"name": state.topic(config.name).name}))
    else:
        state.create_topic(config)
    return not exists, topic_view(state, config.name)


# -- subscriptions -----------------------------------------------------------------------------
def _subscription_view(topic: str, sub: Subscription) -> SubscriptionView:
    return SubscriptionView(topic, sub.config, _counts(sub, sub.dead_letter))


def subscription_view(state: NamespaceState, topic: str, name: str) -> SubscriptionView:
    return _subscription_view(state.topic(topic).name, state.topic(topic).subscription(name))


def list_subscriptions(state: NamespaceState, topic: str) -> list[SubscriptionView]:
    owner = state.topic(topic)
    return [_subscription_view(owner.name, s) for s in owner.subscriptions.values()]


def put_subscription(
    state: NamespaceState, topic: str, config: SubscriptionConfig, mode: Put
) -> tuple[bool, SubscriptionView]:
    owner = state.topic(topic)
    exists = config.name.lower() in owner.subscriptions
    _check_put(exists, mode, f"subscription {config.name!r} on topic {owner.name!r}")
    if exists:
        current = owner.subscription(config.name).config
        # Rules are managed on their own; keep the name's original casing like Azure.
        state.update_subscription(
            topic, config.model_copy(update={"name": current.name, "rules": current.rules})
        )
    else:
        state.create_subscription(topic, config)
    return not exists, subscription_view(state, topic, config.name)


# -- rules -------------------------------------------------------------------------------------
def rule_view(state: NamespaceState, topic: str, subscription: str, name: str) -> RuleConfig:
    sub = state.topic(topic).subscription(subscription)
    rule = sub.rules.get(name.lower())
    if rule is None:
        raise UnknownEntity(f"rule {name!r} not found on {sub.path}")
    return rule.config


def list_rules(state: NamespaceState, topic: str, subscription: str) -> list[RuleConfig]:
    sub = state.topic(topic).subscription(subscription)
    return [rule.config for _, rule in sorted(sub.rules.items())]


def put_rule(
    state: NamespaceState, topic: str, subscription: str, config: RuleConfig, mode: Put
) -> tuple[bool, RuleConfig]:
    """Raises ``federator_contract.sql.SqlSyntaxError`` for malformed SQL, leaving the old rule in place."""
    sub = state.topic(topic).subscription(subscription)
    exists = config.name.lower() in sub.rules
    _check_put(exists, mode, f"rule {config.name!r} on {sub.path}")
    state.create_rule(topic, subscription, config)
    return not exists, config
