"""SQL filter predicates: what matches and what does not, as the Service Bus docs describe it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federator_contract.sql import Dialect, SqlMessage, parse_filter


def message(system: dict[str, Any] | None = None, **user: Any) -> SqlMessage:
    return SqlMessage(system=system or {}, user=user)


def matches(text: str, msg: SqlMessage, **parameters: Any) -> bool:
    return parse_filter(text, parameters={f"@{k}": v for k, v in parameters.items()}).matches(msg)


ORDER = message(
    {"Label": "the bus route", "MessageId": "m-1", "To": "Store5", "TimeToLive": timedelta(minutes=5)},
    color="red",
    quantity=10,
    price=2.5,
    priority="high",
    active=True,
    nothing=None,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("color = 'red'", True, id="string-equal"),
        pytest.param("color = 'Red'", False, id="string-equality-is-case-sensitive"),
        pytest.param("color <> 'blue'", True, id="not-equal"),
        pytest.param("color != 'red'", False, id="bang-equal"),
        pytest.param("quantity > 9", True, id="greater"),
        pytest.param("quantity >= 10", True, id="greater-or-equal"),
        pytest.param("quantity < 10", False, id="less"),
        pytest.param("quantity <= 10", True, id="less-or-equal"),
        pytest.param("price > 2.08", True, id="decimal-constant"),
        pytest.param("color > 'blue' AND color < 'tan'", True, id="strings-order-ordinally"),
        pytest.param("active = TRUE", True, id="boolean-equal"),
        pytest.param("active <> FALSE", True, id="boolean-not-equal"),
        pytest.param("1 = 1", True, id="true-filter"),
        pytest.param("1 = 0", False, id="false-filter"),
        pytest.param("TRUE", True, id="true-literal"),
        pytest.param("FALSE", False, id="false-literal"),
        pytest.param("NOT FALSE", True, id="not-literal"),
    ],
)
def test_comparisons(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(ORDER) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("quantity = 10.0", True, id="long-promotes-to-double"),
        pytest.param("price = 2.5 AND price < 3", True, id="double-against-long"),
        pytest.param("quantity = '10'", False, id="number-never-equals-string-property"),
        pytest.param("textual = 10", False, id="string-property-never-equals-number"),
        pytest.param("textual > 9", False, id="no-implicit-string-to-number"),
        pytest.param("active = 1", False, id="boolean-is-not-a-number"),
        pytest.param("active > inactive", False, id="booleans-do-not-order"),
        pytest.param("sys.TimeToLive > duration", True, id="timespans-compare"),
        pytest.param("identifier = identifier", True, id="uuids-equal"),
        pytest.param("blob = blob", False, id="bytes-never-compare"),
    ],
)
def test_type_coercion(text: str, expected: bool) -> None:
    msg = message(
        {"TimeToLive": timedelta(minutes=5)},
        quantity=10,
        price=2.5,
        textual="10",
        active=True,
        inactive=False,
        duration=timedelta(minutes=1),
        identifier=uuid.UUID(int=7),
        blob=b"\x00",
    )
    assert parse_filter(text).matches(msg) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("missing = 1", False, id="comparison-with-unknown-is-unknown"),
        pytest.param("missing <> 1", False, id="not-equal-with-unknown-is-unknown"),
        pytest.param("NOT (missing = 1)", False, id="not-unknown-is-unknown"),
        pytest.param("missing = 1 AND quantity = 10", False, id="unknown-and-true-is-unknown"),
        pytest.param("missing = 1 AND quantity = 0", False, id="unknown-and-false-is-false"),
        pytest.param("NOT (missing = 1 AND quantity = 0)", True, id="not-of-unknown-and-false-is-true"),
        pytest.param("missing = 1 OR quantity = 10", True, id="unknown-or-true-is-true"),
        pytest.param("missing = 1 OR quantity = 0", False, id="unknown-or-false-is-unknown"),
        pytest.param("NOT (missing = 1 OR quantity = 0)", False, id="not-of-unknown-or-false-is-unknown"),
        pytest.param("missing IS NULL", True, id="missing-is-null"),
        pytest.param("missing IS NOT NULL", False, id="missing-is-not-not-null"),
        pytest.param("nothing IS NULL", True, id="null-value-is-null"),
        pytest.param("quantity IS NOT NULL", True, id="set-value-is-not-null"),
        pytest.param("missing + 1 = 1", False, id="arithmetic-with-unknown-is-unknown"),
        pytest.param("-missing = 0", False, id="unary-minus-of-unknown-is-unknown"),
        pytest.param("missing LIKE '%'", False, id="like-on-unknown-is-unknown"),
        pytest.param("NOT (missing LIKE '%')", False, id="not-like-on-unknown-is-unknown"),
        pytest.param("color LIKE missing", False, id="like-with-unknown-pattern-is-unknown"),
        pytest.param("missing IN (1, 2)", False, id="in-on-unknown-is-unknown"),
        pytest.param("missing NOT IN (1, 2)", False, id="not-in-on-unknown-is-unknown"),
        pytest.param("nothing = NULL", False, id="equals-null-is-unknown-use-is-null"),
        pytest.param("sys.ReplyTo IS NULL", True, id="unset-system-property-is-null"),
    ],
)
def test_unknown_values_follow_three_valued_logic(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(ORDER) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("EXISTS(color)", True, id="set-property"),
        pytest.param("EXISTS(nothing)", True, id="property-set-to-null-exists"),
        pytest.param("EXISTS(missing)", False, id="absent-property"),
        pytest.param("NOT EXISTS(missing)", True, id="negated"),
        pytest.param("EXISTS(user.COLOR)", True, id="scoped-and-case-insensitive"),
        pytest.param("EXISTS(sys.Label)", True, id="set-system-property"),
        pytest.param("EXISTS(sys.ReplyTo)", False, id="unset-system-property"),
        pytest.param("EXISTS ( [color] )", True, id="delimited"),
    ],
)
def test_exists(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(ORDER) is expected


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        pytest.param("v LIKE 'ABC%'", "ABCdef", True, id="percent-matches-a-run"),
        pytest.param("v LIKE 'ABC%'", "ABC", True, id="percent-matches-nothing"),
        pytest.param("v LIKE 'ABC%'", "xABC", False, id="anchored-at-start"),
        pytest.param("v LIKE '%bus%'", "the bus route", True, id="contains"),
        pytest.param("v LIKE 'a_c'", "abc", True, id="underscore-matches-one"),
        pytest.param("v LIKE 'a_c'", "ac", False, id="underscore-needs-one"),
        pytest.param("v LIKE 'a_c'", "abbc", False, id="underscore-matches-only-one"),
        pytest.param("v LIKE 'abc'", "ABC", False, id="case-sensitive"),
        pytest.param("v LIKE 'a.c'", "abc", False, id="regex-characters-are-literal"),
        pytest.param("v LIKE '%'", "line1\nline2", True, id="percent-spans-newlines"),
        pytest.param("v LIKE 'ABC\\%' ESCAPE '\\'", "ABC%", True, id="escaped-percent-is-literal"),
        pytest.param("v LIKE 'ABC\\%' ESCAPE '\\'", "ABCdef", False, id="escaped-percent-is-not-wildcard"),
        pytest.param("v LIKE 'a!_c' ESCAPE '!'", "a_c", True, id="escaped-underscore"),
        pytest.param("v LIKE 'a!_c' ESCAPE '!'", "abc", False, id="escaped-underscore-is-not-wildcard"),
        pytest.param("v LIKE 'a!!c' ESCAPE '!'", "a!c", True, id="escaped-escape"),
        pytest.param("v NOT LIKE 'x%'", "abc", True, id="not-like"),
        pytest.param("v NOT LIKE 'a%'", "abc", False, id="not-like-of-match"),
        pytest.param("v LIKE pattern", "abc", True, id="pattern-from-a-property"),
        pytest.param("v LIKE pattern ESCAPE esc", "a%", True, id="escape-from-a-property"),
        pytest.param("v LIKE 'a' + '%'", "abc", True, id="pattern-from-constant-expression"),
        pytest.param("number LIKE '1%'", "abc", False, id="non-string-operand-is-unknown"),
    ],
)
def test_like(text: str, value: str, expected: bool) -> None:
    msg = message(v=value, pattern="a%", esc="!", number=12)
    if "esc" in text:
        msg.user["pattern"] = "a!%"
    assert parse_filter(text).matches(msg) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("color IN ('blue', 'red')", True, id="in"),
        pytest.param("color IN ('blue')", False, id="not-in-list"),
        pytest.param("color NOT IN ('blue', 'green')", True, id="not-in"),
        pytest.param("color NOT IN ('red')", False, id="not-in-of-member"),
        pytest.param("quantity IN (1, 10.0)", True, id="numeric-promotion"),
        pytest.param("quantity IN ('10')", False, id="no-string-number-conversion"),
        pytest.param("active IN (1)", False, id="boolean-is-not-one"),
        pytest.param("color IN (priority, 'red')", True, id="items-may-be-properties"),
        pytest.param("color IN (missing, 'red')", True, id="unknown-item-does-not-spoil-a-match"),
        pytest.param("color IN (missing)", False, id="unknown-item-never-matches"),
        pytest.param(
            "sys.To IN ('Store5', 'Store6', 'Store7') OR StoreId = 'Store8'", True, id="docs-example"
        ),
    ],
)
def test_in(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(ORDER) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("quantity + 5 = 15", True, id="add"),
        pytest.param("quantity - 15 = -5", True, id="subtract"),
        pytest.param("quantity * price = 25.0", True, id="multiply-promotes"),
        pytest.param("quantity / 4 = 2", True, id="long-division-truncates"),
        pytest.param("-quantity / 4 = -2", True, id="long-division-truncates-toward-zero"),
        pytest.param("quantity / 4.0 = 2.5", True, id="double-division"),
        pytest.param("quantity % 3 = 1", True, id="remainder"),
        pytest.param("-quantity % 3 = -1", True, id="remainder-takes-dividend-sign"),
        pytest.param("price % 1 = 0.5", True, id="double-remainder"),
        pytest.param("quantity / zero = 0 OR quantity / zero <> 0", False, id="division-by-zero-is-unknown"),
        pytest.param("price / zero = 0 OR price / zero <> 0", False, id="double-division-by-zero-is-unknown"),
        pytest.param("2 + 3 * 4 = 14", True, id="multiplication-binds-tighter"),
        pytest.param("(2 + 3) * 4 = 20", True, id="parentheses"),
        pytest.param("10 - 4 - 3 = 3", True, id="left-associative-minus"),
        pytest.param("24 / 4 / 2 = 3", True, id="left-associative-division"),
        pytest.param("- - 5 = 5", True, id="double-negation"),
        pytest.param("+quantity = 10", True, id="unary-plus"),
        pytest.param("-(quantity) = -10", True, id="unary-minus-of-parenthesized"),
        pytest.param("101.5E5 = 10150000", True, id="approximate-number"),
        pytest.param("0.5E-2 = 0.005", True, id="negative-exponent"),
        pytest.param(".5 = 0.5", True, id="leading-dot-decimal"),
        pytest.param("9223372036854775807 + 1 < 0", True, id="long-arithmetic-wraps-like-csharp"),
        pytest.param("first + ' ' + last = 'Ada Lovelace'", True, id="string-concatenation"),
        pytest.param("first + 1 = 'Ada1'", False, id="string-plus-number-is-unknown"),
        pytest.param("color * 2 = 4", False, id="string-times-number-is-unknown"),
    ],
)
def test_arithmetic(text: str, expected: bool) -> None:
    msg = message(quantity=10, price=2.5, zero=0, first="Ada", last="Lovelace", color="red")
    assert parse_filter(text).matches(msg) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a = 1 OR b = 1 AND c = 1", True, id="and-binds-tighter-than-or"),
        pytest.param("(a = 1 OR b = 1) AND c = 1", False, id="parentheses-override"),
        pytest.param("NOT a = 1 OR a = 1", True, id="not-binds-tighter-than-or"),
        pytest.param("NOT (a = 1 OR a = 1)", False, id="not-of-parenthesized"),
        pytest.param("NOT NOT a = 1", True, id="double-not"),
        pytest.param("a = 1 AND NOT b = 1", True, id="and-not"),
        pytest.param("((a = 1))", True, id="nested-parentheses"),
    ],
)
def test_logical_precedence(text: str, expected: bool) -> None:
    assert parse_filter(text).matches(message(a=1, b=0, c=0)) is expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("color = 'red' and quantity > 5", id="lower-case"),
        pytest.param("color = 'red' AnD quantity > 5", id="mixed-case"),
        pytest.param("NOT color IN ('blue') and NOT quantity Is nUlL", id="not-in-is-null"),
        pytest.param("color like 're%' escape '!' or false", id="like-escape-or-false"),
        pytest.param("exists(color) AND True", id="exists-true"),
        pytest.param("SYS.LABEL like '%bus%'", id="scope-and-system-name"),
        pytest.param("USER.COLOR = 'red'", id="user-scope-and-name"),
        pytest.param("NEWID() <> NEWID()", id="function-name"),
    ],
)
def test_keywords_and_names_are_case_insensitive(text: str) -> None:
    assert parse_filter(text).matches(ORDER) is True


@pytest.mark.parametrize(
    ("text", "user", "expected"),
    [
        pytest.param("[repl-target] = 'hub-b'", {"repl-target": "hub-b"}, True, id="delimited-with-hyphen"),
        pytest.param(
            "[Property With Space] = 1", {"Property With Space": 1}, True, id="delimited-with-spaces"
        ),
        pytest.param("user.[my prop] = 1", {"my prop": 1}, True, id="scoped-delimited"),
        pytest.param("[a.b] = 1", {"a.b": 1}, True, id="delimited-with-dot"),
        pytest.param("[a]]b] = 1", {"a]b": 1}, True, id="doubled-bracket-escapes"),
        pytest.param('"Contoso & Northwind" = 1', {"Contoso & Northwind": 1}, True, id="quoted-identifier"),
        pytest.param('"say ""hi""" = 1', {'say "hi"': 1}, True, id="doubled-quote-escapes"),
        pytest.param("[and] = 1", {"and": 1}, True, id="delimited-keyword"),
        pytest.param("user.not = 1", {"not": 1}, True, id="keyword-after-scope"),
        pytest.param("größe = 1", {"größe": 1}, True, id="unicode-letters"),
        pytest.param("a_1 = 1", {"A_1": 1}, True, id="names-case-insensitive"),
        pytest.param("[repl-target] IS NULL", {}, True, id="missing-delimited"),
        pytest.param("'it''s' = quote", {"quote": "it's"}, True, id="doubled-single-quote-in-string"),
    ],
)
def test_identifiers_and_strings(text: str, user: dict[str, Any], expected: bool) -> None:
    assert parse_filter(text).matches(SqlMessage(system={}, user=user)) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("sys.Label = 'the bus route'", True, id="label"),
        pytest.param("sys.Subject = 'the bus route'", True, id="subject-is-label"),
        pytest.param("sys.[Label] = 'the bus route'", True, id="delimited-system-name"),
        pytest.param("sys.label LIKE '%bus%'", True, id="docs-example-lower-case"),
        pytest.param("sys.MessageId = 'm-1'", True, id="message-id"),
        pytest.param("sys.messageid = 'm-1'", True, id="message-id-lower-case"),
        pytest.param("sys.TimeToLive = ttl", True, id="time-to-live"),
        pytest.param("sys.SequenceNumber > 100", True, id="sequence-number"),
        pytest.param("sys.EnqueuedTimeUtc < sys.ScheduledEnqueueTimeUtc", True, id="datetimes"),
        pytest.param("sys.EnqueuedTime = sys.EnqueuedTimeUtc", True, id="sdk-name-alias"),
        pytest.param("sys.CorrelationId = 'c'", False, id="unset-is-unknown"),
        pytest.param("Label = 'the bus route'", False, id="unscoped-name-is-a-user-property"),
    ],
)
def test_system_properties(text: str, expected: bool) -> None:
    msg = message(
        {
            "Label": "the bus route",
            "MessageId": "m-1",
            "TimeToLive": timedelta(minutes=2),
            "SequenceNumber": 101,
            "EnqueuedTimeUtc": datetime(2030, 1, 1, tzinfo=UTC),
            "ScheduledEnqueueTimeUtc": datetime(2030, 1, 2),  # naive: read as UTC
        },
        ttl=timedelta(seconds=120),
    )
    assert parse_filter(text).matches(msg) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("newid() <> newid()", True, id="newid-is-fresh-each-time"),
        pytest.param("property('color') = 'red'", True, id="property"),
        pytest.param("p('color') = 'red'", True, id="p"),
        pytest.param("p('sys.Label') = 'the bus route'", True, id="p-system"),
        pytest.param("p('user.color') = 'red'", True, id="p-user-scope"),
        pytest.param("p('co' + 'lor') = 'red'", True, id="p-of-expression"),
        pytest.param("p(name) = 'red'", True, id="p-of-property"),
        pytest.param("p('sys.Nope') = 1 OR p('sys.Nope') <> 1", False, id="p-of-unknown-system-property"),
        pytest.param("p(quantity) = 1 OR p(quantity) <> 1", False, id="p-of-non-string-is-unknown"),
    ],
)
def test_functions(text: str, expected: bool) -> None:
    msg = message({"Label": "the bus route"}, color="red", name="color", quantity=1)
    assert parse_filter(text).matches(msg) is expected


def test_parameters_bind_like_sql_filter_parameters() -> None:
    msg = message(
        source="orders",
        DateTimeMp1=datetime(2030, 1, 1, 12, 0),
        DateTimeMp2=datetime(2030, 1, 1, 12, 5, tzinfo=UTC),
    )
    assert matches("source = @stringParam", msg, stringParam="orders")
    assert not matches("source = @stringParam", msg, stringParam="returns")
    assert matches("(DateTimeMp2 - DateTimeMp1) <= @timespan", msg, timespan=timedelta(minutes=5))
    assert not matches("DateTimeMp2 - DateTimeMp1 <= @timespan", msg, timespan=timedelta(minutes=4))
    assert matches("DateTimeMp1 + @timespan = DateTimeMp2", msg, timespan=timedelta(minutes=5))
    assert parse_filter("source = @P", parameters={"p": "orders"}).matches(msg)


def test_long_chains_evaluate_without_deep_recursion() -> None:
    chain = parse_filter(" AND ".join(["a = 1"] * 3000), Dialect.FEDERATOR)
    assert chain.matches(message(a=1))
    assert not chain.matches(message(a=2))


def test_filters_are_reusable_and_do_not_mutate_the_message() -> None:
    compiled = parse_filter("color = 'red' AND EXISTS(quantity)")
    red, blue = message(color="red", quantity=1), message(color="blue", quantity=1)
    assert [compiled.matches(m) for m in (red, blue, red)] == [True, False, True]
    assert red == message(color="red", quantity=1)
    assert compiled.text == "color = 'red' AND EXISTS(quantity)"
    assert compiled.dialect is Dialect.SERVICE_BUS
