"""Application property values keep their AMQP type across a hop.

Rows carry property values as text (a Spark map needs one value type) and, beside them, a tag for each
value that was not a string when it was read. A sink sends tagged values back as what they were, so a
consumer's filter such as ``replication = 1`` or ``priority > 5`` still matches a copy; untagged values
(strings, binary, anything an editor or ``setProperties`` wrote) are sent as strings.

The Python SDKs decode every AMQP integer type, and timestamps (milliseconds since the epoch), to a
Python int, so integers are forwarded as AMQP int, or long when they do not fit 32 bits
(``sinks/amqp_encoding.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

PropertyValue = str | int | float | bool | datetime | uuid.UUID

# bool before int: a bool is an int in Python.
_TAGS: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (datetime, "timestamp"),
    (uuid.UUID, "uuid"),
)


def _timestamp(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


_PARSERS: dict[str, Callable[[str], PropertyValue]] = {
    "bool": lambda text: text == "true",
    "int": int,
    "float": float,
    "timestamp": _timestamp,
    "uuid": uuid.UUID,
}


def as_text(value: Any) -> str:
    """A property value as the row keeps it; ``None`` (an AMQP null) as the empty string."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).isoformat()
    return str(value)


def tag_of(value: Any) -> str | None:
    """The tag of a value that is not text, or None for a string, bytes or an unknown type."""
    for kind, tag in _TAGS:
        if isinstance(value, kind):
            return tag
    return None


def read(raw: Mapping[Any, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """An SDK message's application properties as (text values, tags of the typed ones)."""
    properties: dict[str, str] = {}
    types: dict[str, str] = {}
    for key, value in (raw or {}).items():
        name = as_text(key)
        properties[name] = as_text(value)
        if not isinstance(value, str | bytes) and (tag := tag_of(value)) is not None:
            types[name] = tag
    return properties, types


def typed(properties: Mapping[str, str], types: Mapping[str, str]) -> dict[str, PropertyValue]:
    """The values to send: tagged ones back to their type, when the text still parses as it."""
    if not types:
        return dict(properties)
    values: dict[str, PropertyValue] = dict(properties)
    for name, tag in types.items():
        text = properties.get(name)
        parse = _PARSERS.get(tag)
        if text is None or parse is None:
            continue
        try:
            values[name] = parse(text)
        except ValueError:  # an editor wrote something else under the name: it stays text
            continue
    return values


def still_tagged(
    types: Mapping[str, str], before: Mapping[str, str], after: Mapping[str, str]
) -> dict[str, str]:
    """The tags that still apply once properties changed from ``before`` to ``after``: a value
    something rewrote is that writer's text, whatever it looks like."""
    return {name: tag for name, tag in types.items() if name in after and after[name] == before.get(name)}
