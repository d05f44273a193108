"""A subscription's rules over its AMQP management node: ``com.microsoft:add-rule``, ``remove-rule`` and
``enumerate-rules`` (the JS SDK's ``createRuleManager``), encoded as the Service Bus AMQP request/response
reference describes them: described lists for rule descriptions, filters and actions.
"""

from __future__ import annotations

from typing import Any

from proton import Described, ulong

from federator_contract.emulatorconfig import CorrelationFilterConfig, RuleConfig
from federator_emulator.amqp import codec
from federator_emulator.amqp.endpoints import OperationError
from federator_emulator.amqp.sqlvalues import to_amqp, to_sql
from federator_emulator.state.namespace import NamespaceState

# Descriptor codes (Microsoft's domain 0x137).
RULE_DESCRIPTION = 0x0000013700000004
EMPTY_RULE_ACTION = 0x0000013700000005
SQL_RULE_ACTION = 0x0000013700000006
SQL_FILTER = 0x0000001370000006
TRUE_FILTER = 0x0000001370000007
FALSE_FILTER = 0x0000001370000008
CORRELATION_FILTER = 0x0000001370000009
_COMPATIBILITY_LEVEL = 20
# The expressions of Service Bus's true and false filters (as the management plane renders them).
TRUE_SQL = "1=1"
FALSE_SQL = "1=0"

# Correlation filter map keys, in the order of the described list, and their config fields.
_CORRELATION = [
    ("correlation-id", "correlation_id"),
    ("message-id", "message_id"),
    ("to", "to"),
    ("reply-to", "reply_to"),
    ("label", "label"),
    ("session-id", "session_id"),
    ("reply-to-session-id", None),  # not modelled: refused when given
    ("content-type", "content_type"),
]
_ENTITY_EXISTS = "com.microsoft:entity-already-exists"


def _subscription_of(parts: list[str]) -> tuple[str, str]:
    if len(parts) != 3 or parts[1] != "subscriptions":
        raise OperationError(400, "amqp:not-allowed", "rule operations are served by a subscription only")
    return parts[0], parts[2]


def _text(map_: dict[str, Any], key: str) -> str | None:
    value = map_.get(key)
    return None if value is None else str(value)


def _correlation(filter_map: dict[str, Any]) -> CorrelationFilterConfig:
    fields: dict[str, Any] = {}
    for key, field in _CORRELATION:
        value = _text(filter_map, key)
        if value is None:
            continue
        if field is None:
            raise ValueError(f"correlation-filter {key!r} is not supported by the emulator")
        fields[field] = value
    # Typed as Service Bus types them (a timestamp is a DateTime, …): compared with a message's values
    # and listed back in their AMQP types, not as the integers proton decodes some of them to.
    properties = filter_map.get("properties") or {}
    fields["properties"] = {str(key): to_sql(value) for key, value in properties.items()}
    return CorrelationFilterConfig.model_validate(fields)


def rule_from_request(body: dict[str, Any]) -> RuleConfig:
    """An add-rule request body to a rule config; bad input raises ``ValueError`` naming the field."""
    name = _text(body, "rule-name")
    description = codec.own(body.get("rule-description"))
    if not name or not isinstance(description, dict):
        raise ValueError("add-rule needs a 'rule-name' and a 'rule-description' map")
    fields: dict[str, Any] = {"name": name}
    if isinstance(description.get("sql-filter"), dict):
        expression = _text(description["sql-filter"], "expression")
        if not expression:
            raise ValueError("sql-filter: an 'expression' is required")
        fields["sql_filter"] = expression
    elif isinstance(description.get("correlation-filter"), dict):
        fields["correlation_filter"] = _correlation(description["correlation-filter"])
    else:
        raise ValueError("rule-description: a 'sql-filter' or 'correlation-filter' map is required")
    if isinstance(description.get("sql-rule-action"), dict):
        fields["sql_action"] = _text(description["sql-rule-action"], "expression")
    return RuleConfig.model_validate(fields)


def _filter_described(rule: RuleConfig) -> Described:
    if rule.correlation_filter is not None:
        c = rule.correlation_filter
        values: list[Any] = [getattr(c, field) if field else None for _, field in _CORRELATION]
        properties: dict[Any, Any] = {key: to_amqp(value) for key, value in c.properties.items()}
        return Described(ulong(CORRELATION_FILTER), [*values, properties])
    sql = rule.sql_filter or TRUE_SQL
    code = {TRUE_SQL: TRUE_FILTER, FALSE_SQL: FALSE_FILTER}.get(sql.replace(" ", ""), SQL_FILTER)
    return Described(ulong(code), [sql, _COMPATIBILITY_LEVEL])


def rule_description(rule: RuleConfig) -> Described:
    action = (
        Described(ulong(SQL_RULE_ACTION), [rule.sql_action, _COMPATIBILITY_LEVEL])
        if rule.sql_action
        else Described(ulong(EMPTY_RULE_ACTION), [])
    )
    return Described(ulong(RULE_DESCRIPTION), [_filter_described(rule), action, rule.name])


def add_rule(namespace: NamespaceState, parts: list[str], body: dict[str, Any]) -> None:
    topic, subscription = _subscription_of(parts)
    rule = rule_from_request(body)
    if rule.name.lower() in namespace.topic(topic).subscription(subscription).rules:
        where = f"{topic}/{subscription}"
        raise OperationError(409, _ENTITY_EXISTS, f"The rule '{rule.name}' already exists on {where}.")
    namespace.create_rule(topic, subscription, rule)


def remove_rule(namespace: NamespaceState, parts: list[str], body: dict[str, Any]) -> None:
    topic, subscription = _subscription_of(parts)
    name = _text(body, "rule-name")
    if not name:
        raise ValueError("remove-rule needs a 'rule-name'")
    namespace.delete_rule(topic, subscription, name)


def enumerate_rules(
    namespace: NamespaceState, parts: list[str], body: dict[str, Any]
) -> list[dict[str, Any]]:
    """The subscription's rules by name, ``skip`` and ``top`` applied, each as ``{"rule-description": …}``."""
    topic, subscription = _subscription_of(parts)
    rules = namespace.topic(topic).subscription(subscription).rules
    skip, top = int(body.get("skip") or 0), int(body.get("top") or len(rules))
    ordered = [rules[name].config for name in sorted(rules)][skip : skip + top]
    return [{"rule-description": rule_description(rule)} for rule in ordered]
