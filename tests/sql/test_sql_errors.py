"""Malformed expressions are refused at parse time with a reason and the position of the problem."""

from __future__ import annotations

from typing import Any

import pytest

from federator_contract.sql import Dialect, SqlSyntaxError, parse_action, parse_filter


def refusal(parse: Any, text: str, **kwargs: Any) -> tuple[str, int]:
    with pytest.raises(SqlSyntaxError) as caught:
        parse(text, **kwargs)
    assert caught.value.expression == text
    return caught.value.reason, caught.value.position


@pytest.mark.parametrize(
    ("text", "reason", "position"),
    [
        pytest.param("", "empty expression", 0, id="empty"),
        pytest.param("   ", "empty expression", 0, id="blank"),
        pytest.param("(a = 1", "expected ')'", 6, id="unclosed-parenthesis"),
        pytest.param("((a = 1) OR b = 2", "expected ')'", 17, id="unbalanced-nested-parentheses"),
        pytest.param("a = 1)", "unexpected ')'", 5, id="extra-closing-parenthesis"),
        pytest.param("a = 'red", "unterminated string literal", 4, id="unterminated-string"),
        pytest.param("a = 'it''s", "unterminated string literal", 4, id="unterminated-after-escaped-quote"),
        pytest.param("[repl-target = 1", "unterminated delimited identifier", 0, id="unterminated-brackets"),
        pytest.param(
            '"my prop = 1', "unterminated quoted identifier", 0, id="unterminated-quoted-identifier"
        ),
        pytest.param("[] = 1", "empty identifier", 0, id="empty-delimited-identifier"),
        pytest.param(
            "a = 1 AND " + "(" * 400 + "a = 1" + ")" * 400, "expression nested too deeply", 0, id="deep"
        ),
        pytest.param(
            "a = '" + "x" * 1020 + "'", "expression longer than 1024 characters", 1024, id="too-long"
        ),
        pytest.param("a == 1", "unknown operator '=='", 2, id="double-equals"),
        pytest.param("a => 1", "unknown operator '=>'", 2, id="arrow"),
        pytest.param("a = 1 && b = 2", "unknown operator '&&'", 6, id="c-style-and"),
        pytest.param("a = 1 # b", "unexpected character '#'", 6, id="stray-character"),
        pytest.param("a = ", "expected an expression", 4, id="missing-right-operand"),
        pytest.param("= 1", "expected an expression", 0, id="missing-left-operand"),
        pytest.param("a = 1 AND", "expected an expression", 9, id="dangling-and"),
        pytest.param("a = 1 OR OR b = 1", "expected an expression", 9, id="doubled-or"),
        pytest.param("a + = 1", "expected an expression", 4, id="missing-arithmetic-operand"),
        pytest.param("a = 1 b = 2", "unexpected 'b'", 6, id="trailing-garbage"),
        pytest.param("a = 1 = 2", "unexpected '='", 6, id="chained-comparison"),
        pytest.param("foo(1) = 1", "unknown function 'foo'", 0, id="unknown-function"),
        pytest.param("newid(1) = 1", "function 'newid' takes 0 arguments", 0, id="newid-arity"),
        pytest.param("p() = 1", "function 'p' takes 1 argument", 0, id="property-arity"),
        pytest.param("p(5) = 1", "a property name must be a string", 2, id="property-name-not-a-string"),
        pytest.param("a LIKE 5", "LIKE pattern must be a string", 7, id="numeric-like-pattern"),
        pytest.param("a LIKE TRUE", "LIKE pattern must be a string", 7, id="boolean-like-pattern"),
        pytest.param("5 LIKE 'x'", "LIKE applies to a string", 0, id="numeric-like-operand"),
        pytest.param("a LIKE 'x' ESCAPE 'ab'", "ESCAPE must be a single character", 18, id="long-escape"),
        pytest.param("a LIKE 'x' ESCAPE ''", "ESCAPE must be a single character", 18, id="empty-escape"),
        pytest.param("a LIKE 'x' ESCAPE 1", "ESCAPE must be a single character", 18, id="numeric-escape"),
        pytest.param(
            "a LIKE 'x!' ESCAPE '!'", "LIKE pattern ends with its escape character", 7, id="dangling-escape"
        ),
        pytest.param("a NOT 5", "expected LIKE or IN", 6, id="not-without-like-or-in"),
        pytest.param("a IN 1", "expected '(' after IN", 5, id="in-without-list"),
        pytest.param("a IN ()", "expected an expression", 6, id="empty-in-list"),
        pytest.param("a IN (1, 2", "expected ',' or ')'", 10, id="unclosed-in-list"),
        pytest.param("a IN (1 2)", "expected ',' or ')'", 8, id="in-list-without-comma"),
        pytest.param("a IS 5", "expected NULL", 5, id="is-without-null"),
        pytest.param("5 IS NULL", "IS NULL applies to a property", 0, id="is-null-on-constant"),
        pytest.param("newid() IS NULL", "IS NULL applies to a property", 0, id="is-null-on-function"),
        pytest.param("EXISTS a", "expected '(' after EXISTS", 7, id="exists-without-parenthesis"),
        pytest.param("EXISTS(1)", "expected a property", 7, id="exists-of-constant"),
        pytest.param("EXISTS(a", "expected ')'", 8, id="exists-unclosed"),
        pytest.param("a", "expected a predicate", 0, id="bare-property"),
        pytest.param("5", "expected a predicate", 0, id="bare-number"),
        pytest.param("a = 1 AND 'x'", "expected a predicate", 10, id="string-operand-of-and"),
        pytest.param("NOT a", "expected a predicate", 4, id="not-of-property"),
        pytest.param("(a = 1) + 1 = 2", "a predicate cannot be used as a value", 0, id="predicate-as-value"),
        pytest.param("a = (b = 1)", "a predicate cannot be used as a value", 4, id="predicate-as-operand"),
        pytest.param("1 = 'x'", "cannot compare number with string", 2, id="number-vs-string-constants"),
        pytest.param(
            "TRUE > FALSE", "operator '>' cannot be applied to boolean and boolean", 5, id="order-booleans"
        ),
        pytest.param(
            "'a' * 2 = 1", "operator '*' cannot be applied to string and number", 4, id="string-times"
        ),
        pytest.param("a * 'x' = 1", "operator '*' cannot be applied to string", 2, id="times-string"),
        pytest.param("-'a' = 1", "operator '-' cannot be applied to string", 0, id="negate-string"),
        pytest.param("1 / 0 = 1", "division by zero", 2, id="constant-division-by-zero"),
        pytest.param("a = 99999999999999999999", "integer constant out of range", 4, id="integer-overflow"),
        pytest.param("a = 1e999", "numeric constant out of range", 4, id="double-overflow"),
        pytest.param("sys.Nope = 1", "unknown system property 'Nope'", 4, id="unknown-system-property"),
        pytest.param("sys.[Lab el] = 1", "unknown system property 'Lab el'", 4, id="delimited-system-name"),
        pytest.param("[a].b = 1", "unexpected '.'", 3, id="dot-after-delimited-name"),
        pytest.param("foo.bar = 1", "unknown scope 'foo'", 0, id="unknown-scope"),
        pytest.param("user.a.b = 1", "unexpected '.'", 6, id="dotted-name-needs-brackets"),
        pytest.param("user. = 1", "expected a property name", 6, id="scope-without-name"),
        pytest.param("body.a = 1", "body references need the federator dialect", 0, id="body-in-service-bus"),
        pytest.param("@missing = 1", "unknown parameter '@missing'", 0, id="unbound-parameter"),
        pytest.param("@ = 1", "expected a parameter name after '@'", 0, id="parameter-without-name"),
        pytest.param("SET a = 1", "expected an expression", 0, id="action-given-as-filter"),
    ],
)
def test_malformed_filters(text: str, reason: str, position: int) -> None:
    assert refusal(parse_filter, text) == (reason, position)


@pytest.mark.parametrize(
    ("text", "reason", "position"),
    [
        pytest.param("", "empty expression", 0, id="empty"),
        pytest.param("SET", "expected a property", 3, id="set-without-target"),
        pytest.param("SET a 1", "expected '='", 6, id="set-without-equals"),
        pytest.param("SET a =", "expected an expression", 7, id="set-without-value"),
        pytest.param("SET a = 1 = 2", "expected SET or REMOVE", 10, id="comparison-in-set"),
        pytest.param("SET a = b > 1", "expected SET or REMOVE", 10, id="predicate-in-set"),
        pytest.param(
            "SET a = (b > 1)", "a predicate cannot be used as a value", 8, id="parenthesized-predicate"
        ),
        pytest.param("SET a = 1;;", "expected SET or REMOVE", 10, id="double-semicolon"),
        pytest.param("; SET a = 1", "expected SET or REMOVE", 0, id="leading-semicolon"),
        pytest.param("DELETE a", "expected SET or REMOVE", 0, id="unknown-statement"),
        pytest.param("a = 1", "expected SET or REMOVE", 0, id="filter-given-as-action"),
        pytest.param("REMOVE 1", "expected a property", 7, id="remove-constant"),
        pytest.param(
            "SET sys.SequenceNumber = 1", "sys.SequenceNumber is read-only", 4, id="read-only-sequence"
        ),
        pytest.param(
            "SET sys.EnqueuedTime = '2030-01-01'", "sys.EnqueuedTimeUtc is read-only", 4, id="ro-alias"
        ),
        pytest.param("REMOVE sys.DeliveryCount", "sys.DeliveryCount is read-only", 7, id="remove-read-only"),
        pytest.param("SET sys.Nope = 1", "unknown system property 'Nope'", 8, id="unknown-system-target"),
        pytest.param(
            "SET sys.TimeToLive = 'soon'",
            "cannot assign to sys.TimeToLive: invalid TimeSpan 'soon'",
            21,
            id="bad-timespan",
        ),
        pytest.param(
            "SET sys.TimeToLive = '0:60:0'",
            "cannot assign to sys.TimeToLive: invalid TimeSpan '0:60:0'",
            21,
            id="minutes-out-of-range",
        ),
        pytest.param(
            "SET sys.TimeToLive = 5",
            "cannot assign to sys.TimeToLive: 5 is not a TimeSpan",
            21,
            id="number-is-not-a-timespan",
        ),
        pytest.param(
            "SET sys.ScheduledEnqueueTimeUtc = 'tomorrow'",
            "cannot assign to sys.ScheduledEnqueueTimeUtc: 'tomorrow' is not an ISO 8601 date and time",
            34,
            id="bad-datetime",
        ),
        pytest.param(
            "SET sys.Label = TRUE", "cannot assign to sys.Label: True is not a string", 16, id="bool-label"
        ),
        pytest.param("SET a = foo()", "unknown function 'foo'", 8, id="unknown-function"),
    ],
)
def test_malformed_actions(text: str, reason: str, position: int) -> None:
    assert refusal(parse_action, text) == (reason, position)


def test_the_length_limit_is_a_service_bus_one() -> None:
    long_condition = " OR ".join(f"body.region = 'r{n}'" for n in range(100))
    assert len(long_condition) > 1024
    assert parse_filter(long_condition, Dialect.FEDERATOR).text == long_condition


def test_body_references_are_refused_in_actions_of_the_service_bus_dialect() -> None:
    assert refusal(parse_action, "SET a = body.x") == ("body references need the federator dialect", 8)
    assert refusal(parse_action, "SET body.x = 1", dialect=Dialect.FEDERATOR) == (
        "body references are read-only",
        4,
    )


def test_message_names_reason_position_and_points_at_the_problem() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_filter("color = 'red' AND foo(1)")
    assert str(caught.value).splitlines() == [
        "unknown function 'foo' at position 18: color = 'red' AND foo(1)",
        " " * len("unknown function 'foo' at position 18: color = 'red' AND ") + "^",
    ]


def test_multi_line_expressions_get_no_caret() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_filter("a = 1\nAND")
    assert str(caught.value) == "expected an expression at position 9: a = 1\nAND"


def test_syntax_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unterminated string literal"):
        parse_filter("a = '")
