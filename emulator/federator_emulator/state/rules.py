"""Subscription rules: a filter plus an optional action, compiled with ``federator_contract.sql``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from federator_contract import sql
from federator_contract.emulatorconfig import DEFAULT_RULE_NAME, RuleConfig


class _Filter(Protocol):
    def matches(self, message: Any) -> bool: ...


class _Action(Protocol):
    def apply(self, message: Any) -> None: ...


class _TrueFilter:
    def matches(self, message: Any) -> bool:
        return True


@dataclass(frozen=True)
class Rule:
    config: RuleConfig
    filter: _Filter
    action: _Action | None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def matches_everything(self) -> bool:
        """A rule without a filter: no message needs to be looked at to know it matches."""
        return isinstance(self.filter, _TrueFilter)


def compile_rule(config: RuleConfig) -> Rule:
    """Parse the rule's SQL with its parameters; raises ``federator_contract.sql.SqlSyntaxError`` on
    malformed text (an empty expression included, as Azure refuses it)."""
    rule_filter: _Filter
    if config.sql_filter is not None:
        rule_filter = sql.parse_filter(config.sql_filter, parameters=config.sql_filter_parameters)
    elif config.correlation_filter is not None:
        c = config.correlation_filter
        rule_filter = sql.CorrelationFilter(
            correlation_id=c.correlation_id,
            message_id=c.message_id,
            label=c.label,
            to=c.to,
            reply_to=c.reply_to,
            session_id=c.session_id,
            content_type=c.content_type,
            properties=dict(c.properties),
        )
    else:
        rule_filter = _TrueFilter()
    action = (
        None
        if config.sql_action is None
        else sql.parse_action(config.sql_action, parameters=config.sql_action_parameters)
    )
    return Rule(config, rule_filter, action)


def default_rule() -> Rule:
    """The ``$Default`` rule Azure gives every new subscription: a true filter, no action."""
    return Rule(RuleConfig(name=DEFAULT_RULE_NAME), _TrueFilter(), None)
