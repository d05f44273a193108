"""Service Bus topics: subscriptions with rules, and fan-out of sent messages."""

from __future__ import annotations

from federator_contract.emulatorconfig import RuleConfig, SubscriptionConfig, TopicConfig
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.journal import Journal
from federator_emulator.state.rules import Rule, compile_rule, default_rule
from federator_emulator.state.servicebus import Clock, ConfiguredEntity, DuplicateDetector, Inbound


class Subscription(ConfiguredEntity):
    config: SubscriptionConfig

    def __init__(self, topic: Topic, config: SubscriptionConfig) -> None:
        self.config = config
        self.topic = topic
        super().__init__(f"{topic.name}/Subscriptions/{config.name}", topic.journal, topic.clock)
        self.rules: dict[str, Rule] = {}
        if config.rules is None:
            rule = default_rule()
            self.rules[rule.name.lower()] = rule
        for rule_config in config.rules or []:
            self.put_rule(rule_config)

    @property
    def default_ttl(self) -> float | None:
        """The shorter of the subscription's and the topic's default message TTL."""
        ttls = [
            t
            for t in (self.config.default_message_ttl_seconds, self.topic.config.default_message_ttl_seconds)
            if t
        ]
        return min(ttls) if ttls else None

    def put_rule(self, config: RuleConfig) -> None:
        self.rules[config.name.lower()] = compile_rule(config)

    def delete_rule(self, name: str) -> None:
        if self.rules.pop(name.lower(), None) is None:
            raise UnknownEntity(f"rule {name!r} not found on {self.path}")

    def route(self, inbound: Inbound) -> Inbound | None:
        """The copy this subscription receives, or None when no rule matches.

        One copy per subscription: the actions of all matching rules apply, in rule-name order.
        """
        view = inbound.sql_view()
        matched = [r for _, r in sorted(self.rules.items()) if r.filter.matches(view)]
        if not matched:
            return None
        actions = [r.action for r in matched if r.action is not None]
        if not actions:
            return inbound
        for action in actions:
            action.apply(view)
        return inbound.rewritten(view)


class Topic:
    def __init__(self, config: TopicConfig, journal: Journal, clock: Clock) -> None:
        self.config = config.model_copy(update={"subscriptions": []})
        self.journal = journal
        self.clock = clock
        self.subscriptions: dict[str, Subscription] = {}
        self.duplicates = DuplicateDetector(config.duplicate_detection_window_seconds)
        self.next_sequence_number = 1
        for sub in config.subscriptions:
            self.create_subscription(sub)

    @property
    def name(self) -> str:
        return self.config.name

    def create_subscription(self, config: SubscriptionConfig) -> Subscription:
        if config.name.lower() in self.subscriptions:
            raise ValueError(f"subscription {config.name!r} already exists on topic {self.name!r}")
        sub = Subscription(self, config)
        self.subscriptions[config.name.lower()] = sub
        return sub

    def update_subscription(self, config: SubscriptionConfig) -> Subscription:
        """Replace a subscription's properties; its rules are managed with put/delete_rule."""
        sub = self.subscription(config.name)
        sub.config = config
        return sub

    def delete_subscription(self, name: str) -> None:
        self.subscription(name)
        del self.subscriptions[name.lower()]

    def subscription(self, name: str) -> Subscription:
        try:
            return self.subscriptions[name.lower()]
        except KeyError:
            raise UnknownEntity(f"subscription {name!r} not found on topic {self.name!r}") from None

    def send(self, inbound: Inbound) -> int | None:
        """Fan out to matching subscriptions; returns the sequence number, None if a duplicate.

        Each copy keeps the topic-assigned sequence number, as on Azure.
        """
        now = self.clock()
        if self.config.requires_duplicate_detection:
            self.duplicates.window_seconds = self.config.duplicate_detection_window_seconds
            if self.duplicates.is_duplicate(inbound.message_id, now):
                return None
        seq = self.next_sequence_number
        self.next_sequence_number += 1
        for sub in self.subscriptions.values():
            copy = sub.route(inbound)
            if copy is not None:
                sub.enqueue(copy, sequence_number=seq)
        return seq

    def cancel_scheduled(self, sequence_numbers: list[int]) -> None:
        for sub in self.subscriptions.values():
            sub.cancel_scheduled(sequence_numbers)

    def restore_sequence(self) -> None:
        """After a replay, continue numbering after the highest number any copy had."""
        for sub in self.subscriptions.values():
            self.next_sequence_number = max(self.next_sequence_number, sub.next_sequence_number)
