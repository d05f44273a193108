"""Entity properties as both management APIs name them, to and from the emulator's configs.

ARM (JSON, ``lockDuration``) and ATOM (XML, ``LockDuration``) use the same property names
up to the first letter, so one table serves both. Values arrive as JSON types from ARM and
as strings from ATOM; ``_convert`` accepts either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from federator_contract.emulatorconfig import CorrelationFilterConfig, RuleConfig, RuleValue
from federator_emulator.mgmt import durations, rulevalues

M = TypeVar("M", bound=BaseModel)
Kind = Literal["bool", "int", "duration", "ttl", "text"]

# (property name, config field, kind). Configs without a field simply skip the row.
PROPERTIES: list[tuple[str, str, Kind]] = [
    ("lockDuration", "lock_duration_seconds", "duration"),
    ("requiresDuplicateDetection", "requires_duplicate_detection", "bool"),
    ("requiresSession", "requires_session", "bool"),
    ("defaultMessageTimeToLive", "default_message_ttl_seconds", "ttl"),
    ("deadLetteringOnMessageExpiration", "dead_lettering_on_message_expiration", "bool"),
    ("duplicateDetectionHistoryTimeWindow", "duplicate_detection_window_seconds", "duration"),
    ("maxDeliveryCount", "max_delivery_count", "int"),
    ("userMetadata", "user_metadata", "text"),
]

# Correlation filter properties (ARM/ATOM camelCase name -> config field); ATOM says Label too.
CORRELATION_FIELDS: dict[str, str] = {
    "correlationId": "correlation_id",
    "messageId": "message_id",
    "to": "to",
    "replyTo": "reply_to",
    "label": "label",
    "sessionId": "session_id",
    "contentType": "content_type",
}

TRUE_SQL = "1=1"
FALSE_SQL = "1=0"
# What Azure answers (400 BadRequest) for a SQL filter or action without an expression.
MISSING_SQL_EXPRESSION = "Value cannot be null. Parameter name: sqlExpression"


def required_sql(expression: str | None) -> str:
    """A SQL filter's or action's expression; a missing or blank one is refused, as Azure does."""
    if expression is None or not expression.strip():
        raise ValueError(MISSING_SQL_EXPRESSION)
    return expression


def _convert(value: Any, kind: Kind) -> Any:
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).strip().lower() == "true"
    if kind == "int":
        return int(value)
    if kind == "text":
        return str(value)
    if kind == "duration":
        return durations.parse(str(value))
    return durations.parse_optional(None if value is None else str(value))


def config_from_properties(model: type[M], name: str, properties: Mapping[str, Any]) -> M:
    """A config from management properties; absent properties take the config defaults.

    Raises ``ValueError`` (pydantic's ``ValidationError`` included) for bad values.
    """
    fields: dict[str, Any] = {"name": name}
    for prop, field, kind in PROPERTIES:
        if field in model.model_fields and properties.get(prop) is not None:
            fields[field] = _convert(properties[prop], kind)
    return model.model_validate(fields)


def properties_of(config: BaseModel) -> dict[str, Any]:
    """The management properties of a config, durations as ISO 8601 text."""
    values = config.model_dump()
    out: dict[str, Any] = {}
    for prop, field, kind in PROPERTIES:
        if field not in values:
            continue
        value = values[field]
        if kind == "text" and value is None:
            continue
        out[prop] = durations.render(value) if kind in ("duration", "ttl") else value
    return out


# -- rules in ARM's shape ------------------------------------------------------------------------
def rule_from_arm(name: str, properties: Mapping[str, Any]) -> RuleConfig:
    """``Ruleproperties`` JSON to a rule config; SQL is only parsed when the rule is applied.

    ARM's rules carry no parameters (its ``SqlFilter`` and ``Action`` have none); an ``action``
    without an expression is no action, as ARM renders one (``"action": {}``).
    """
    filter_type = properties.get("filterType") or "SqlFilter"
    action = ((properties.get("action") or {}).get("sqlExpression") or "").strip() or None
    if filter_type == "CorrelationFilter":
        raw = properties.get("correlationFilter") or {}
        correlation = CorrelationFilterConfig.model_validate(
            {
                **{
                    field: raw[prop]
                    for prop, field in CORRELATION_FIELDS.items()
                    if raw.get(prop) is not None
                },
                "properties": raw.get("properties") or {},
            }
        )
        return RuleConfig(name=name, correlation_filter=correlation, sql_action=action)
    if filter_type != "SqlFilter":
        raise ValueError(f"unsupported filterType {filter_type!r}: use SqlFilter or CorrelationFilter")
    sql = required_sql((properties.get("sqlFilter") or {}).get("sqlExpression"))
    return RuleConfig(name=name, sql_filter=sql, sql_action=action)


def _arm_text(value: RuleValue) -> str:
    """ARM's correlation properties are strings."""
    return value if isinstance(value, str) else rulevalues.to_text(value)[1]


def rule_to_arm(config: RuleConfig) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if config.correlation_filter is not None:
        c = config.correlation_filter
        props["filterType"] = "CorrelationFilter"
        props["correlationFilter"] = {
            **{prop: getattr(c, field) for prop, field in CORRELATION_FIELDS.items() if getattr(c, field)},
            "properties": {k: _arm_text(v) for k, v in c.properties.items()},
        }
    else:
        props["filterType"] = "SqlFilter"
        props["sqlFilter"] = {
            "sqlExpression": config.sql_filter or TRUE_SQL,
            "compatibilityLevel": 20,
            "requiresPreprocessing": False,
        }
    if config.sql_action:
        props["action"] = {"sqlExpression": config.sql_action, "compatibilityLevel": 20}
    return props
