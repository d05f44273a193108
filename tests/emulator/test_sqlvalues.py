"""The AMQP → SQL value table (docs/sql.md) for the types no Python SDK sends, and the encoding of values
that actions compute. The rest of the table is exercised end to end in ``test_rule_values``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from azure.servicebus._pyamqp._encode import encode_decimal128
from proton import Described, char, decimal32, decimal64, decimal128, symbol, timestamp

from federator_emulator.amqp.sqlvalues import to_amqp, to_sql


def test_char_is_a_number_as_in_csharp() -> None:
    assert to_sql(char("A")) == 65


@pytest.mark.parametrize(
    ("encoded", "value"),
    [
        pytest.param(decimal32((99 << 23) | 125), Decimal("1.25"), id="decimal32"),  # bias 101: 99 is -2
        pytest.param(decimal64((396 << 53) | 125), Decimal("1.25"), id="decimal64"),  # bias 398: 396 is -2
        pytest.param(decimal64((1 << 63) | (398 << 53) | 7), Decimal("-7"), id="decimal64-negative"),
        pytest.param(decimal32(0x78000000), None, id="infinity-is-unknown"),
    ],
)
def test_decimals_decode_from_the_binary_integer_encoding(encoded: object, value: Decimal | None) -> None:
    assert to_sql(encoded) == value


@pytest.mark.parametrize("text", ["1.25", "-0.001", "79228162514264337593543950335", "0", "1E+10"])
def test_decimals_an_action_computes_are_encoded_as_the_sdks_encode_them(text: str) -> None:
    sdk = bytearray()
    encode_decimal128(sdk, Decimal(text))
    encoded = to_amqp(Decimal(text))
    assert isinstance(encoded, decimal128) and bytes(encoded) == bytes(sdk[1:])  # minus the constructor
    assert to_sql(encoded) == Decimal(text)


def test_times_and_spans_round_trip() -> None:
    instant = datetime(2021, 1, 1, 12, 30, tzinfo=UTC)
    assert to_sql(to_amqp(instant)) == instant
    assert to_amqp(datetime(1970, 1, 1, 0, 0, 1)) == timestamp(1000)  # naive is UTC
    assert to_sql(to_amqp(timedelta(minutes=90))) == timedelta(minutes=90)
    assert to_sql(timestamp(2**62)) is None  # beyond any DateTime: unknown


def test_other_vendors_described_values_are_kept_as_they_are() -> None:
    other = Described(symbol("com.example:thing"), 5)
    assert to_sql(other) is other
