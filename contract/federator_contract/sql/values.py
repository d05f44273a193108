"""Runtime values and the operator semantics between them.

Service Bus documents that operators "follow C# implicit conversion semantics": numbers promote
from long to double (and from long to decimal), and nothing converts implicitly between strings,
numbers and booleans, nor between decimal and double. So an operation between incompatible values
is *unknown* (``None``), never an exception, and the same tables tell the parser which operations
between constants can never succeed.
"""

from __future__ import annotations

import decimal
import enum
import math
import operator
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any


class ValueClass(enum.Enum):
    NULL = "null"
    NUMBER = "number"  # long (int) or double (float); never bool
    DECIMAL = "decimal"  # System.Decimal (decimal.Decimal): application properties and parameters only
    STRING = "string"
    BOOLEAN = "boolean"
    DATETIME = "datetime"
    TIMESPAN = "timespan"
    UUID = "uuid"
    OTHER = "other"  # bytes, JSON objects and arrays: only present or absent, never compared


_CLASS_BY_TYPE: dict[type, ValueClass] = {
    type(None): ValueClass.NULL,
    int: ValueClass.NUMBER,
    float: ValueClass.NUMBER,
    decimal.Decimal: ValueClass.DECIMAL,
    str: ValueClass.STRING,
    bool: ValueClass.BOOLEAN,
    datetime: ValueClass.DATETIME,
    timedelta: ValueClass.TIMESPAN,
    uuid.UUID: ValueClass.UUID,
}


def classify(value: Any) -> ValueClass:
    cls = _CLASS_BY_TYPE.get(type(value))
    if cls is not None:
        return cls
    # Subclasses (IntEnum, str enums, pendulum datetimes...) behave as their base type;
    # bool is tested before int because it is one.
    for base in (bool, int, float, decimal.Decimal, str, datetime, timedelta, uuid.UUID):
        if isinstance(value, base):
            return _CLASS_BY_TYPE[base]
    return ValueClass.OTHER


# ---------------------------------------------------------------------------------------------
# Comparison

_EQUALITY_CLASSES = frozenset(
    {
        ValueClass.NUMBER,
        ValueClass.DECIMAL,
        ValueClass.STRING,
        ValueClass.BOOLEAN,
        ValueClass.DATETIME,
        ValueClass.TIMESPAN,
        ValueClass.UUID,
    }
)
# C# has no ordering operators for bool or Guid. Strings order ordinally (by code point).
_ORDERED_CLASSES = frozenset(
    {ValueClass.NUMBER, ValueClass.DECIMAL, ValueClass.STRING, ValueClass.DATETIME, ValueClass.TIMESPAN}
)

_COMPARATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def comparison_possible(op: str, left: ValueClass | None, right: ValueClass | None) -> bool:
    """Whether ``left op right`` can ever be known, ``None`` standing for "not known until run time"."""
    known = [cls for cls in (left, right) if cls is not None and cls is not ValueClass.NULL]
    if any(cls not in _allowed(op) for cls in known):
        return False
    return len(known) < 2 or known[0] is known[1] or {known[0], known[1]} == _DECIMAL_AND_NUMBER


def compare(op: str, left: Any, right: Any) -> bool | None:
    """``left op right`` in three-valued logic: ``None`` when either side is unknown or they don't compare."""
    if left is None or right is None:
        return None
    cls = classify(left)
    if cls is not classify(right):
        promoted = _as_decimals(left, right)
        if promoted is None:
            return None
        (left, right), cls = promoted, ValueClass.DECIMAL
    if cls not in _allowed(op):
        return None
    if cls is ValueClass.DATETIME:
        left, right = as_utc(left), as_utc(right)
    return _COMPARATORS[op](left, right)


_DECIMAL_AND_NUMBER = {ValueClass.DECIMAL, ValueClass.NUMBER}


def _as_decimals(left: Any, right: Any) -> tuple[decimal.Decimal, decimal.Decimal] | None:
    """A decimal and a long as two decimals (C# converts long to decimal implicitly); ``None`` for any
    other pair, a double among them (C# has no implicit conversion between decimal and double)."""
    pair = (left, right)
    if not any(isinstance(v, decimal.Decimal) for v in pair):
        return None
    if any(isinstance(v, bool | float) or not isinstance(v, int | decimal.Decimal) for v in pair):
        return None
    return decimal.Decimal(left), decimal.Decimal(right)


def _allowed(op: str) -> frozenset[ValueClass]:
    return _EQUALITY_CLASSES if op == "=" or op == "<>" else _ORDERED_CLASSES


def equals(left: Any, right: Any) -> bool:
    """Equality as IN lists and correlation filters use it: unknown counts as not equal."""
    return compare("=", left, right) is True


def as_utc(value: datetime) -> datetime:
    """Service Bus times are UTC: a naive datetime is taken to be UTC so it compares with aware ones."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


# ---------------------------------------------------------------------------------------------
# Arithmetic

_N, _S, _DT, _TS = ValueClass.NUMBER, ValueClass.STRING, ValueClass.DATETIME, ValueClass.TIMESPAN
_D = ValueClass.DECIMAL
_NUMERIC_OPERATORS = ("+", "-", "*", "/", "%")

# (operator, left, right) -> result class: the C# operators that exist between these types.
# '+' between strings is C# string concatenation. A decimal mixes with a long, not a double (checked
# when the values are known).
_ARITHMETIC: dict[tuple[str, ValueClass, ValueClass], ValueClass] = {
    **{(op, _N, _N): _N for op in _NUMERIC_OPERATORS},
    **{(op, left, right): _D for op in _NUMERIC_OPERATORS for left, right in ((_D, _D), (_D, _N), (_N, _D))},
    ("+", _S, _S): _S,
    ("-", _DT, _DT): _TS,
    ("+", _DT, _TS): _DT,
    ("+", _TS, _DT): _DT,
    ("-", _DT, _TS): _DT,
    ("+", _TS, _TS): _TS,
    ("-", _TS, _TS): _TS,
}
_SIGNED_CLASSES = frozenset({_N, _D, _TS})


def arithmetic_class(op: str, left: ValueClass | None, right: ValueClass | None) -> ValueClass | None:
    """The class of ``left op right`` when both are known and the operator exists between them."""
    if left is None or right is None:
        return None
    return _ARITHMETIC.get((op, left, right))


def arithmetic_possible(op: str, left: ValueClass | None, right: ValueClass | None) -> bool:
    """Whether some values of these classes (``None``: any class) make ``left op right`` known."""
    if ValueClass.NULL in (left, right):
        return True  # always unknown, but legal SQL
    return any(
        row_op == op and left in (None, row_left) and right in (None, row_right)
        for row_op, row_left, row_right in _ARITHMETIC
    )


def sign_possible(operand: ValueClass | None) -> bool:
    return operand is None or operand is ValueClass.NULL or operand in _SIGNED_CLASSES


def arithmetic(op: str, left: Any, right: Any) -> Any:
    """``left op right``; ``None`` (unknown) for unknown operands, missing operators, division by zero."""
    if left is None or right is None:
        return None
    result_class = _ARITHMETIC.get((op, classify(left), classify(right)))
    if result_class is None:
        return None
    if result_class is _N:
        return _numeric(op, left, right)
    if result_class is _D:
        promoted = _as_decimals(left, right)
        return None if promoted is None else _decimal(op, *promoted)
    if result_class is _S:
        return left + right
    # Dates and timespans: Python's datetime arithmetic is C#'s, once naive times are read as UTC.
    if isinstance(left, datetime):
        left = as_utc(left)
    if isinstance(right, datetime):
        right = as_utc(right)
    try:
        return left + right if op == "+" else left - right
    except OverflowError:
        return None


def negate(value: Any) -> Any:
    """Unary minus: numbers and timespans, anything else unknown."""
    cls = classify(value)
    if cls is _N:
        return _wrap_int64(-value) if isinstance(value, int) else -value
    if cls in (_D, _TS):
        return -value
    return None


def identity(value: Any) -> Any:
    """Unary plus: the value itself for numbers and timespans, anything else unknown."""
    return value if classify(value) in _SIGNED_CLASSES else None


def _numeric(op: str, left: int | float, right: int | float) -> int | float | None:
    if isinstance(left, int) and isinstance(right, int):
        return _long(op, left, right)
    left, right = float(left), float(right)
    if op in ("/", "%") and right == 0.0:
        return None  # C# would give Infinity/NaN; a filter is better served by "unknown"
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return left / right
    return math.fmod(left, right)  # C# remainder takes the sign of the dividend


# System.Decimal: 28 significant digits, magnitudes below 2**96 (about 7.9e28).
_DECIMAL_CONTEXT = decimal.Context(prec=28, traps=[decimal.InvalidOperation, decimal.DivisionByZero])
_DECIMAL_MAX = decimal.Decimal(2**96 - 1)


def _decimal(op: str, left: decimal.Decimal, right: decimal.Decimal) -> decimal.Decimal | None:
    """C# decimal arithmetic; ``None`` where C# throws (division by zero, overflow)."""
    try:
        if op == "+":
            result = _DECIMAL_CONTEXT.add(left, right)
        elif op == "-":
            result = _DECIMAL_CONTEXT.subtract(left, right)
        elif op == "*":
            result = _DECIMAL_CONTEXT.multiply(left, right)
        elif op == "/":
            result = _DECIMAL_CONTEXT.divide(left, right)
        else:
            result = _DECIMAL_CONTEXT.remainder(left, right)  # the sign of the dividend, as in C#
    except decimal.DecimalException:
        return None
    return result if abs(result) <= _DECIMAL_MAX else None


def _long(op: str, left: int, right: int) -> int | None:
    if op == "+":
        return _wrap_int64(left + right)
    if op == "-":
        return _wrap_int64(left - right)
    if op == "*":
        return _wrap_int64(left * right)
    if right == 0:
        return None  # C# throws DivideByZeroException; evaluation never raises
    # C# integer division truncates toward zero; Python's // floors.
    quotient = abs(left) // abs(right)
    if (left < 0) != (right < 0):
        quotient = -quotient
    return _wrap_int64(quotient) if op == "/" else left - right * quotient


def _wrap_int64(value: int) -> int:
    """C# long arithmetic is unchecked: it wraps around instead of growing."""
    return (value + 2**63) % 2**64 - 2**63
