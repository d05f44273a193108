"""One namespace's entities and the operations on them. Plain objects, no protocol.

All methods must be called from the emulator's reactor thread (the data plane runs
there); other threads, such as a management plane, go through
``RunningEmulator.call(...)`` which runs a function on that thread. Management methods
(``create_*``, ``update_*``, ``delete_*``) take effect for the running data plane at once,
and are journaled (durable when they return) like messages: a restart replays them, in
order with the messages, on top of the entities the config declares.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from federator_contract.emulatorconfig import (
    EventHubConfig,
    NamespaceConfig,
    QueueConfig,
    RuleConfig,
    SubscriptionConfig,
    TopicConfig,
)
from federator_emulator.state.eventhubs import EventHub, PartitionLog, UnknownEntity
from federator_emulator.state.journal import Journal, NullJournal, Record
from federator_emulator.state.servicebus import Queue, ReceivableEntity
from federator_emulator.state.topics import Subscription, Topic

logger = logging.getLogger(__name__)

Clock = Callable[[], float]


class EntityExists(ValueError):
    """An entity with that name already exists in the namespace."""


class NamespaceState:
    def __init__(
        self, config: NamespaceConfig, journal: Journal | None = None, clock: Clock = time.time
    ) -> None:
        self.config = config
        self.journal: Journal = journal or NullJournal()
        self.clock = clock
        self.created_at = clock()  # epoch seconds: what ``$namespaceinfo`` reports
        self.event_hubs: dict[str, EventHub] = {}
        self.queues: dict[str, Queue] = {}
        self.topics: dict[str, Topic] = {}
        # The config's entities, and changes replayed from the journal, are not journaled again.
        self._journaling = False
        for hub in config.event_hubs:
            self.create_event_hub(hub)
        for queue in config.queues:
            self.create_queue(queue)
        for topic in config.topics:
            self.create_topic(topic)
        self._journaling = True

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def keys(self) -> dict[str, str]:
        """SAS key name -> key, as used for CBS token verification. A key without a value (the emulator
        gives each one at start, ``saskeys``) verifies nothing."""
        return {k.name: k.key for k in self.config.keys if k.key is not None}

    @property
    def sas_rights(self) -> dict[str, frozenset[str]]:
        """SAS key name -> the claims its tokens carry."""
        return {k.name: frozenset(k.rights) for k in self.config.keys}

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def has_entity(self, name: str) -> bool:
        """Whether an event hub, queue or topic of this name exists."""
        key = name.lower()
        return key in self.event_hubs or key in self.queues or key in self.topics

    # -- management: event hubs ----------------------------------------------------------
    def _check_free(self, name: str) -> None:
        if self.has_entity(name):
            raise EntityExists(f"entity {name!r} already exists in namespace {self.name!r}")

    def create_event_hub(self, config: EventHubConfig) -> EventHub:
        """Add an event hub; consumers and producers can attach immediately."""
        self._check_free(config.name)
        hub = EventHub(config, created_at_ms=self.now_ms())
        self.event_hubs[config.name.lower()] = hub
        self._changed("put", "event-hub", config=config)
        return hub

    def delete_event_hub(self, name: str) -> None:
        """Remove an event hub and its events (attached links are left to fail on next use)."""
        self.event_hub(name)
        del self.event_hubs[name.lower()]
        self._changed("delete", "event-hub", name)

    def event_hub(self, name: str) -> EventHub:
        try:
            return self.event_hubs[name.lower()]
        except KeyError:
            raise UnknownEntity(f"event hub {name!r} not found in namespace {self.name!r}") from None

    # -- management: service bus ---------------------------------------------------------
    def create_queue(self, config: QueueConfig) -> Queue:
        self._check_free(config.name)
        queue = Queue(config, self.journal, self.clock)
        self.queues[config.name.lower()] = queue
        self._changed("put", "queue", config=config)
        return queue

    def update_queue(self, config: QueueConfig) -> Queue:
        """Replace a queue's properties (lock duration, TTL ...); messages are kept."""
        queue = self.queue(config.name)
        queue.config = config
        self._changed("put", "queue", config=config)
        return queue

    def delete_queue(self, name: str) -> None:
        self.queue(name)
        del self.queues[name.lower()]
        self._changed("delete", "queue", name)

    def queue(self, name: str) -> Queue:
        try:
            return self.queues[name.lower()]
        except KeyError:
            raise UnknownEntity(f"queue {name!r} not found in namespace {self.name!r}") from None

    def create_topic(self, config: TopicConfig) -> Topic:
        """Add a topic with the subscriptions (and their rules) its config declares."""
        self._check_free(config.name)
        topic = Topic(config, self.journal, self.clock)
        self.topics[config.name.lower()] = topic
        self._changed("put", "topic", config=config)
        return topic

    def update_topic(self, config: TopicConfig) -> Topic:
        """Replace a topic's own properties; subscriptions are managed separately."""
        topic = self.topic(config.name)
        topic.config = config.model_copy(update={"subscriptions": []})
        self._changed("put", "topic", config=topic.config)
        return topic

    def delete_topic(self, name: str) -> None:
        self.topic(name)
        del self.topics[name.lower()]
        self._changed("delete", "topic", name)

    def topic(self, name: str) -> Topic:
        try:
            return self.topics[name.lower()]
        except KeyError:
            raise UnknownEntity(f"topic {name!r} not found in namespace {self.name!r}") from None

    def create_subscription(self, topic: str, config: SubscriptionConfig) -> Subscription:
        """Add a subscription; without rules in the config it gets the ``$Default`` true rule."""
        subscription = self.topic(topic).create_subscription(config)
        self._changed("put", "subscription", topic, config=config)
        return subscription

    def update_subscription(self, topic: str, config: SubscriptionConfig) -> Subscription:
        subscription = self.topic(topic).update_subscription(config)
        self._changed("put", "subscription", topic, config=config)
        return subscription

    def delete_subscription(self, topic: str, name: str) -> None:
        self.topic(topic).delete_subscription(name)
        self._changed("delete", "subscription", topic, name)

    def create_rule(self, topic: str, subscription: str, config: RuleConfig) -> None:
        """Add or replace a rule; the next message sent to the topic is filtered by it.

        Raises ``federator_contract.sql.SqlSyntaxError`` for malformed SQL.
        """
        self.topic(topic).subscription(subscription).put_rule(config)
        self._changed("put", "rule", topic, subscription, config=config)

    def delete_rule(self, topic: str, subscription: str, name: str) -> None:
        self.topic(topic).subscription(subscription).delete_rule(name)
        self._changed("delete", "rule", topic, subscription, name)

    # -- durability of management changes -------------------------------------------------
    def _changed(self, change: str, kind: str, *names: str, config: BaseModel | None = None) -> None:
        """Journal a management change and commit it: the management call answers after this."""
        if not self._journaling:
            return
        meta: dict[str, Any] = {"k": "mgmt", change: kind, "n": list(names)}
        if config is not None:
            meta["cfg"] = config.model_dump(mode="json", by_alias=True)
        self.journal.write(meta)
        self.journal.commit()

    def _replay_change(self, meta: dict[str, Any]) -> None:
        """Apply a journaled change: a put creates or updates, a delete of what is gone is skipped
        (the config may have changed since), with a warning for what cannot apply."""
        names = meta["n"]
        try:
            if "put" in meta:
                _PUTS[meta["put"]](self, *names, meta["cfg"])
            else:
                _DELETES[meta["delete"]](self, *names)
        except (LookupError, ValueError) as exc:  # UnknownEntity, EntityExists, bad SQL, bad config
            logger.warning("namespace %s: journaled change %s not replayed: %s", self.name, meta, exc)

    # -- data plane ------------------------------------------------------------------------
    def publish_events(self, partition: PartitionLog, hub: str, payloads: Sequence[bytes]) -> None:
        """Append events to a partition; durable once ``journal.commit()`` returns."""
        now = self.now_ms()
        record = {"k": "eh", "h": hub, "p": partition.partition_id, "t": now}
        for payload in payloads:
            self.journal.write(record, payload)
        partition.extend(payloads, now)
        partition.notify()

    def tick(self) -> None:
        """Run time-driven work: retention, lock expiry, TTL, scheduled messages."""
        now_ms = self.now_ms()
        for hub in self.event_hubs.values():
            hub.expire(now_ms)
        for entity in self.receivable_entities():
            entity.tick()

    def receivable_entities(self) -> list[ReceivableEntity]:
        """Queues and subscriptions with their dead-letter queues."""
        out: list[ReceivableEntity] = []
        for queue in self.queues.values():
            out += [queue, queue.dead_letter]
        for topic in self.topics.values():
            for sub in topic.subscriptions.values():
                out += [sub, sub.dead_letter]
        return out

    def replay(self, records: Iterable[Record]) -> int:
        """Rebuild state from journal records (before any client connects)."""
        count = 0
        entities = {e.path.lower(): e for e in self.receivable_entities()}
        self._journaling = False
        for meta, payload in records:
            kind = meta["k"]
            if kind == "eh":
                hub = self.event_hubs.get(meta["h"].lower())
                if hub is not None:
                    hub.partition(meta["p"]).append(payload, meta["t"])
            elif kind == "mgmt":
                self._replay_change(meta)
                entities = {e.path.lower(): e for e in self.receivable_entities()}
            else:
                entity = entities.get(meta["e"].lower())
                if entity is not None:
                    entity.replay(meta, payload)
            count += 1
        self._journaling = True
        for topic in self.topics.values():
            topic.restore_sequence()
        return count


def _put_event_hub(state: NamespaceState, raw: Any) -> None:
    config = EventHubConfig.model_validate(raw)
    if config.name.lower() not in state.event_hubs:  # one declared since in the config stays as is
        state.create_event_hub(config)


def _put_queue(state: NamespaceState, raw: Any) -> None:
    config = QueueConfig.model_validate(raw)
    (state.update_queue if config.name.lower() in state.queues else state.create_queue)(config)


def _put_topic(state: NamespaceState, raw: Any) -> None:
    config = TopicConfig.model_validate(raw)
    (state.update_topic if config.name.lower() in state.topics else state.create_topic)(config)


def _put_subscription(state: NamespaceState, topic: str, raw: Any) -> None:
    config = SubscriptionConfig.model_validate(raw)
    exists = config.name.lower() in state.topic(topic).subscriptions
    (state.update_subscription if exists else state.create_subscription)(topic, config)


def _put_rule(state: NamespaceState, topic: str, subscription: str, raw: Any) -> None:
    state.create_rule(topic, subscription, RuleConfig.model_validate(raw))


_PUTS: dict[str, Callable[..., None]] = {
    "event-hub": _put_event_hub,
    "queue": _put_queue,
    "topic": _put_topic,
    "subscription": _put_subscription,
    "rule": _put_rule,
}
_DELETES: dict[str, Callable[..., None]] = {
    "event-hub": NamespaceState.delete_event_hub,
    "queue": NamespaceState.delete_queue,
    "topic": NamespaceState.delete_topic,
    "subscription": NamespaceState.delete_subscription,
    "rule": NamespaceState.delete_rule,
}
