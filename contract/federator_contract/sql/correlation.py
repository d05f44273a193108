"""Correlation filters: equality on a fixed set of system properties and on user properties."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from federator_contract.sql import ast
from federator_contract.sql.evaluate import MISSING, lookup
from federator_contract.sql.model import SqlMessage
from federator_contract.sql.values import equals

# Field of CorrelationFilter -> system property it matches.
_SYSTEM_FIELDS = (
    ("correlation_id", "CorrelationId"),
    ("message_id", "MessageId"),
    ("to", "To"),
    ("reply_to", "ReplyTo"),
    ("label", "Label"),
    ("session_id", "SessionId"),
    ("reply_to_session_id", "ReplyToSessionId"),
    ("content_type", "ContentType"),
)


@dataclass(frozen=True)
class CorrelationFilter:
    """Matches when every field that is set equals the message's property (a logical AND).

    String comparison is case-sensitive; user property names, as everywhere in the language,
    are not. A filter with nothing set matches every message.
    """

    correlation_id: str | None = None
    message_id: str | None = None
    to: str | None = None
    reply_to: str | None = None
    label: str | None = None
    session_id: str | None = None
    reply_to_session_id: str | None = None
    content_type: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def matches(self, message: SqlMessage) -> bool:
        for attribute, system_name in _SYSTEM_FIELDS:
            expected = getattr(self, attribute)
            if expected is not None and not equals(message.system.get(system_name), expected):
                return False
        for name, expected in self.properties.items():
            actual = lookup(ast.Property.user(name), message)
            if actual is MISSING or not equals(actual, expected):
                return False
        return True
