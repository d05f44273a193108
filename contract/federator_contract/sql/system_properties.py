"""The broker properties reachable as ``sys.<name>``, which of them actions may write, and how.

Names follow "Messages, payloads, and serialization" (the BrokeredMessage names); the names of the
current SDKs (``Subject``, ``ScheduledEnqueueTime``...) are accepted as aliases, as the filter
examples advise. Names are case-insensitive.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from federator_contract.sql.values import as_utc


class ConversionError(ValueError):
    """A value that cannot become the type of the system property it is assigned to."""


def to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal | uuid.UUID) and not isinstance(value, bool):
        return str(value)
    raise ConversionError(f"{value!r} is not a string")


def to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConversionError(f"{value!r} is not a boolean")


def to_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, str):
        try:
            return as_utc(datetime.fromisoformat(value.strip()))
        except ValueError:
            raise ConversionError(f"{value!r} is not an ISO 8601 date and time") from None
    raise ConversionError(f"{value!r} is not a date and time")


def to_timespan(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, str):
        parsed = parse_timespan(value)
        if parsed is not None:
            return parsed
        raise ConversionError(f"invalid TimeSpan {value!r}")
    raise ConversionError(f"{value!r} is not a TimeSpan")


# The forms .NET's TimeSpan.Parse accepts: "d", "[d.]h:m[:s[.f]]" and "d:h:m:s[.f]".
_FRACTION = r"(?:\.(?P<fraction>\d{1,7}))?"
_TIMESPAN_FORMS = [
    re.compile(r"(?P<days>\d+)"),
    re.compile(rf"(?:(?P<days>\d+)\.)?(?P<hours>\d+):(?P<minutes>\d+)(?::(?P<seconds>\d+){_FRACTION})?"),
    re.compile(rf"(?P<days>\d+):(?P<hours>\d+):(?P<minutes>\d+):(?P<seconds>\d+){_FRACTION}"),
]


def parse_timespan(text: str) -> timedelta | None:
    """A .NET TimeSpan string ("0:2:0", "1.02:03:04.5") as a timedelta; ``None`` if it is not one."""
    text = text.strip()
    negative = text.startswith("-")
    body = text[1:] if negative else text
    for form in _TIMESPAN_FORMS:
        match = form.fullmatch(body)
        if match is None:
            continue
        parts = {
            name: int(digits) for name, digits in match.groupdict().items() if digits and name != "fraction"
        }
        if parts.get("hours", 0) > 23 or parts.get("minutes", 0) > 59 or parts.get("seconds", 0) > 59:
            return None
        fraction = match.groupdict().get("fraction") or ""
        ticks = int(fraction.ljust(7, "0")) if fraction else 0  # a tick is 100 ns
        span = timedelta(
            days=parts.get("days", 0),
            hours=parts.get("hours", 0),
            minutes=parts.get("minutes", 0),
            seconds=parts.get("seconds", 0),
            microseconds=ticks // 10,
        )
        return -span if negative else span
    return None


def format_timespan(span: timedelta) -> str:
    """``span`` in the .NET TimeSpan form ``[-][d.]hh:mm:ss[.fffffff]`` that actions accept."""
    sign = "-" if span < timedelta(0) else ""
    span = abs(span)
    hours, rest = divmod(span.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    days = f"{span.days}." if span.days else ""
    fraction = f".{span.microseconds * 10:07d}" if span.microseconds else ""
    return f"{sign}{days}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"


@dataclass(frozen=True)
class SystemProperty:
    name: str  # the canonical key in SqlMessage.system
    convert: Callable[[Any], Any] | None = None  # None: read-only

    @property
    def writable(self) -> bool:
        return self.convert is not None


def _defined(*properties: SystemProperty) -> dict[str, SystemProperty]:
    return {prop.name: prop for prop in properties}


SYSTEM_PROPERTIES: Mapping[str, SystemProperty] = _defined(
    SystemProperty("ContentType", to_string),
    SystemProperty("CorrelationId", to_string),
    SystemProperty("ForcePersistence", to_boolean),
    SystemProperty("Label", to_string),
    SystemProperty("MessageId", to_string),
    SystemProperty("PartitionKey", to_string),
    SystemProperty("ReplyTo", to_string),
    SystemProperty("ReplyToSessionId", to_string),
    SystemProperty("ScheduledEnqueueTimeUtc", to_datetime),
    SystemProperty("SessionId", to_string),
    SystemProperty("TimeToLive", to_timespan),
    SystemProperty("To", to_string),
    SystemProperty("ViaPartitionKey", to_string),
    # Read-only: assigned by the broker.
    SystemProperty("DeadLetterSource"),
    SystemProperty("DeliveryCount"),
    SystemProperty("EnqueuedSequenceNumber"),
    SystemProperty("EnqueuedTimeUtc"),
    SystemProperty("ExpiresAtUtc"),
    SystemProperty("LockedUntilUtc"),
    SystemProperty("LockToken"),
    SystemProperty("SequenceNumber"),
    SystemProperty("Size"),
    SystemProperty("State"),
)

# Names of Azure.Messaging.ServiceBus.ServiceBusMessage for the same properties.
_ALIASES = {
    "Subject": "Label",
    "ScheduledEnqueueTime": "ScheduledEnqueueTimeUtc",
    "EnqueuedTime": "EnqueuedTimeUtc",
    "ExpiresAt": "ExpiresAtUtc",
    "LockedUntil": "LockedUntilUtc",
    "TransactionPartitionKey": "ViaPartitionKey",
}

_BY_FOLDED_NAME: dict[str, SystemProperty] = {
    **{name.casefold(): prop for name, prop in SYSTEM_PROPERTIES.items()},
    **{alias.casefold(): SYSTEM_PROPERTIES[name] for alias, name in _ALIASES.items()},
}


def find_system_property(name: str) -> SystemProperty | None:
    """The system property called ``name`` (case-insensitive, aliases included), if there is one."""
    return _BY_FOLDED_NAME.get(name.casefold())
