"""Decimal values (AMQP decimal32/64/128, .NET System.Decimal) follow C#'s rules: a decimal mixes with
a long, never with a double, and its arithmetic is decimal arithmetic."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from federator_contract.sql import SqlMessage, SqlSyntaxError, parse_action, parse_filter

PRICE = SqlMessage(user={"price": Decimal("12.50"), "count": 3, "ratio": 0.5})


def matches(text: str, **parameters: Any) -> bool:
    return parse_filter(text, parameters={f"@{k}": v for k, v in parameters.items()}).matches(PRICE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("price > 12", True, id="long-converts-to-decimal"),
        pytest.param("price < 13 AND price >= 12", True, id="ordered"),
        pytest.param("price = 12", False, id="compared-by-value"),
        pytest.param("price * count = 37.5", False, id="double-constant-never-equals-a-decimal"),
        pytest.param("price * count <> 37.5", False, id="double-constant-is-unknown-not-unequal"),
        pytest.param("price = ratio", False, id="decimal-and-double-property-are-unknown"),
        pytest.param("-price < 0", True, id="negation"),
        pytest.param("price / 0 = 1 OR price / 0 <> 1", False, id="division-by-zero-is-unknown"),
        pytest.param("price IN (12, 13)", False, id="in-compares-by-value"),
    ],
)
def test_comparisons_and_arithmetic(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(PRICE) is expected


def test_decimal_parameters_compare_exactly() -> None:
    assert matches("price * count = @total", total=Decimal("37.5"))
    assert matches("price % 5 = @rest", rest=Decimal("2.50"))  # sign and value of C#'s remainder
    assert matches("price IN (@a, @b)", a=Decimal("1"), b=Decimal("12.5"))
    assert not matches("price + 0.1 > @p", p=Decimal("1"))  # decimal + double: no operator


def test_overflow_is_unknown_where_csharp_throws() -> None:
    huge = SqlMessage(user={"d": Decimal(2**95)})
    assert not parse_filter("d * 4 > 0 OR d * 4 <= 0").matches(huge)
    assert parse_filter("d * 1 > 0").matches(huge)


def test_a_long_assigned_to_a_decimal_property_stays_decimal() -> None:
    msg = SqlMessage(user={"price": Decimal("1.5"), "label": None})
    parse_action("SET price = 2; SET label = price; SET sys.Label = price").apply(msg)
    assert msg.user == {"price": Decimal(2), "label": Decimal(2)}
    assert msg.system["Label"] == "2"


def test_comparing_a_decimal_constant_parameter_with_a_string_is_refused() -> None:
    with pytest.raises(SqlSyntaxError, match="cannot compare decimal with string"):
        parse_filter("@d = 'x'", parameters={"@d": Decimal("1")})
