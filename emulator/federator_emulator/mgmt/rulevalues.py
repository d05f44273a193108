"""Typed rule values (SQL filter and action parameters, correlation filter properties) as text.

ATOM sends each value as ``<Value i:type="d6p1:dateTime">…</Value>``, the type named as .NET's
DataContract names it; ARM's correlation properties are plain strings.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from federator_contract.emulatorconfig import RuleValue
from federator_emulator.mgmt import durations

_INT32 = range(-(2**31), 2**31)
_INTEGER_TYPES = frozenset(
    {"int", "long", "short", "byte", "unsignedByte", "unsignedShort", "unsignedInt", "unsignedLong"}
)


def from_text(kind: str, text: str) -> RuleValue:
    """The value of a typed text; ``ValueError`` naming the problem otherwise."""
    try:
        if kind in _INTEGER_TYPES:
            return int(text)
        if kind in ("double", "float"):
            return float(text)
        if kind == "decimal":
            return Decimal(text)
        if kind == "boolean":
            return {"true": True, "false": False}[text.strip().lower()]
        if kind == "dateTime":
            return datetime.fromisoformat(text.strip())
        if kind == "duration":
            return timedelta(seconds=durations.parse(text))
        if kind == "guid":
            return uuid.UUID(text)
    except (ValueError, KeyError, InvalidOperation):
        raise ValueError(f"invalid {kind} value {text!r}") from None
    if kind == "string":
        return text
    raise ValueError(f"unsupported value type {kind!r}")


def to_text(value: RuleValue) -> tuple[str, str]:
    """(DataContract type name, text) of a value, the form ``from_text`` reads."""
    if isinstance(value, bool):
        return "boolean", str(value).lower()
    if isinstance(value, int):
        return ("int" if value in _INT32 else "long"), str(value)
    if isinstance(value, float):
        return "double", repr(value)
    if isinstance(value, Decimal):
        return "decimal", str(value)
    if isinstance(value, datetime):
        return "dateTime", value.isoformat()
    if isinstance(value, timedelta):
        return "duration", durations.render(value.total_seconds())
    if isinstance(value, uuid.UUID):
        return "guid", str(value)
    return "string", value
