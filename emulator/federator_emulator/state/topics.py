"""Service Bus topics: subscriptions with rules, and fan-out of sent messages.

Fan-out is Azure's ("Topic filters and actions"): a subscription gets one copy of a message per
matching rule that has an action, with that rule's action applied and the user property
``RuleName`` set to the rule's name, plus one unchanged copy if any matching rule has no action
(those rules are OR-ed together).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from federator_contract.emulatorconfig import RuleConfig, SubscriptionConfig, TopicConfig
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.journal import Journal
from federator_emulator.state.rules import Rule, compile_rule, default_rule
from federator_emulator.state.servicebus import Clock, ConfiguredEntity, DuplicateDetector, Inbound

RULE_NAME_PROPERTY = "RuleName"


class Subscription(ConfiguredEntity):
    config: SubscriptionConfig

    def __init__(self, topic: Topic, config: SubscriptionConfig) -> None:
        self.config = config
        self.topic = topic
        super().__init__(f"{topic.name}/Subscriptions/{config.name}", topic.journal, topic.clock)
        self.rules: dict[str, Rule] = {}
        self._ordered: list[Rule] = []  # by name, the order copies are made in
        if config.rules is None:
            self._set_rule(default_rule())
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
        self._set_rule(compile_rule(config))

    def _set_rule(self, rule: Rule) -> None:
        self.rules[rule.name.lower()] = rule
        self._ordered = [r for _, r in sorted(self.rules.items())]

    def delete_rule(self, name: str) -> None:
        if self.rules.pop(name.lower(), None) is None:
            raise UnknownEntity(f"rule {name!r} not found on {self.path}")
        self._ordered = [r for _, r in sorted(self.rules.items())]

    def copies(self, inbound: Inbound, view: Callable[[], Any]) -> list[Inbound]:
        """What this subscription receives of a message: the unchanged copy first (if a matching rule
        has no action), then one copy per matching rule with an action, in rule-name order.

        ``view()`` is the message's SQL view, shared by every subscription's filters (which only
        read it); each action works on a fresh view of its own.
        """
        plain = False
        out: list[Inbound] = []
        for rule in self._ordered:
            if rule.action is None and plain:
                continue  # rules without actions are OR-ed: one match is enough
            if not (rule.matches_everything or rule.filter.matches(view())):
                continue
            if rule.action is None:
                plain = True
                continue
            copy = inbound.sql_view()
            rule.action.apply(copy)
            copy.user[RULE_NAME_PROPERTY] = rule.name
            out.append(inbound.rewritten(copy))
        return [inbound, *out] if plain else out


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

        A subscription's first copy keeps the topic-assigned sequence number, as on Azure; further
        copies (one per matching rule with an action) take the numbers after it, which the topic
        then skips, so numbers stay unique and increasing in every subscription.
        """
        now = self.clock()
        if self.config.requires_duplicate_detection:
            self.duplicates.window_seconds = self.config.duplicate_detection_window_seconds
            if self.duplicates.is_duplicate(inbound.message_id, now):
                return None
        seq = self.next_sequence_number
        self.next_sequence_number += 1
        view = functools.cache(inbound.sql_view)  # made once, and only if a filter looks
        for sub in self.subscriptions.values():
            for offset, copy in enumerate(sub.copies(inbound, view)):
                sub.enqueue(copy, sequence_number=seq + offset)
                self.next_sequence_number = max(self.next_sequence_number, seq + offset + 1)
        return seq

    def cancel_scheduled(self, sequence_numbers: list[int]) -> None:
        for sub in self.subscriptions.values():
            sub.cancel_scheduled(sequence_numbers)

    def restore_sequence(self) -> None:
        """After a replay, continue numbering after the highest number any copy had."""
        for sub in self.subscriptions.values():
            self.next_sequence_number = max(self.next_sequence_number, sub.next_sequence_number)
