"""Application property values between AMQP and the SQL filter language, as Service Bus types them.

Service Bus is .NET: a received property becomes the .NET type its AMQP type maps to ("AMQP 1.0 in
Service Bus": timestamp is DateTime, uuid is Guid, the described ``com.microsoft:timespan`` is a
TimeSpan...) and filters compare those with C#'s implicit conversions. ``to_sql`` gives the Python
value the language evaluates as that .NET type (the table is in docs/sql.md); ``to_amqp`` encodes a
value an action computed. A property an action leaves alone keeps its bytes (see ``messages``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Context, Decimal
from typing import Any

from proton import Described, char, decimal32, decimal64, decimal128, float32, symbol, timestamp

TIMESPAN = symbol("com.microsoft:timespan")
DATETIME_OFFSET = symbol("com.microsoft:datetime-offset")
URI = symbol("com.microsoft:uri")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DOTNET_EPOCH = datetime(1, 1, 1, tzinfo=UTC)  # .NET ticks (100 ns) count from here
_MICROSECOND = timedelta(microseconds=1)

# IEEE 754-2008 decimals in the binary integer (BID) encoding, as AMQP and the SDKs write them:
# width -> (exponent bits, exponent bias, digits).
_DECIMALS = {32: (8, 101, 7), 64: (10, 398, 16), 128: (14, 6176, 34)}


def to_sql(value: Any) -> Any:
    """An AMQP application property value as the SQL language evaluates it."""
    # Proton's typed values subclass int, str, bytes and float: the specific types come first.
    if isinstance(value, timestamp):
        return _from_milliseconds(int(value))
    if isinstance(value, char):
        return ord(value)  # C#'s char converts implicitly to the numeric types, never to string
    if isinstance(value, decimal32 | decimal64):
        return _from_bid(int(value), 32 if isinstance(value, decimal32) else 64)
    if isinstance(value, decimal128):
        return _from_bid(int.from_bytes(value, "big"), 128)
    if isinstance(value, Described):
        return _described(value)
    if isinstance(value, symbol):
        return str(value)
    if isinstance(value, float32):
        return float(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value


def to_amqp(value: Any) -> Any:
    """A value an action computed, encoded as Service Bus would send its .NET type."""
    if isinstance(value, datetime):
        utc = value.replace(tzinfo=UTC) if value.tzinfo is None else value  # SQL reads naive times as UTC
        return timestamp((utc - _EPOCH) // timedelta(milliseconds=1))
    if isinstance(value, timedelta):
        return Described(TIMESPAN, value // _MICROSECOND * 10)
    if isinstance(value, Decimal):
        return decimal128(_to_bid128(value).to_bytes(16, "big"))
    return value


def _described(value: Described) -> Any:
    inner = value.value
    if value.descriptor == TIMESPAN and isinstance(inner, int):
        return _from_ticks(inner)
    if value.descriptor == DATETIME_OFFSET and isinstance(inner, int):
        span = _from_ticks(inner)
        return None if span is None else _DOTNET_EPOCH + span
    if value.descriptor == URI and isinstance(inner, str):
        return str(inner)
    return value  # another vendor's type: present, but never compared


def _from_ticks(ticks: int) -> timedelta | None:
    try:
        return timedelta(microseconds=ticks // 10)  # Python keeps microseconds: a tick is 0.1 µs
    except OverflowError:
        return None


def _from_milliseconds(ms: int) -> datetime | None:
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None  # beyond what a DateTime holds: unknown


def _from_bid(bits: int, width: int) -> Decimal | None:
    exponent_bits, bias, digits = _DECIMALS[width]
    sign = bits >> (width - 1) & 1
    if bits >> (width - 5) & 0b1111 == 0b1111:
        return None  # infinity or NaN: no .NET decimal holds them
    if bits >> (width - 3) & 0b11 == 0b11:
        shift = width - 3 - exponent_bits
        coefficient = (0b100 << shift) | (bits & ((1 << shift) - 1))
    else:
        shift = width - 1 - exponent_bits
        coefficient = bits & ((1 << shift) - 1)
    exponent = (bits >> shift) & ((1 << exponent_bits) - 1)
    if coefficient >= 10**digits:
        coefficient = 0  # a non-canonical coefficient is zero (IEEE 754-2008 §3.5.2)
    return Decimal((sign, tuple(int(d) for d in str(coefficient)), exponent - bias))


def _to_bid128(value: Decimal) -> int:
    exponent_bits, bias, digits = _DECIMALS[128]
    sign, digit_tuple, exponent = Context(prec=digits).plus(value).as_tuple()
    assert isinstance(exponent, int)  # .NET decimals are finite, and so are the language's results
    coefficient = int("".join(map(str, digit_tuple)) or "0")
    # Every coefficient of 34 digits fits the 113 bits of the common form.
    return (sign << 127) | ((exponent + bias) << (128 - 1 - exponent_bits)) | coefficient
