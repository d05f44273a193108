"""The FEDERATOR dialect: read-only ``body.<path>`` references into a decoded JSON body."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from federator_contract.sql import Dialect, SqlMessage, SqlSyntaxError, parse_action, parse_filter

BODY = {
    "order": {"id": 42, "status": "shipped", "total": 99.5, "express": True, "note": None},
    "items": [{"sku": "A-1"}, {"sku": "B-2"}],
    "matrix": [[1, 2], [3, 4]],
    "order id": "x-1",
    "in": {"not": 1},
}


def matches(text: str, body: Any = BODY, **user: Any) -> bool:
    return parse_filter(text, Dialect.FEDERATOR).matches(SqlMessage(system={}, user=user, body=body))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("body.order.status = 'shipped'", True, id="nested-string"),
        pytest.param("body.order.id = 42", True, id="nested-number"),
        pytest.param("body.order.total > 99", True, id="json-double"),
        pytest.param("body.order.express = TRUE", True, id="json-boolean"),
        pytest.param("body.items.1.sku = 'B-2'", True, id="array-index"),
        pytest.param("body.matrix.1.0 = 3", True, id="nested-array-index"),
        pytest.param("body.[order id] = 'x-1'", True, id="delimited-segment"),
        pytest.param("body.in.not = 1", True, id="keyword-segments"),
        pytest.param("body.order.Status = 'shipped'", False, id="json-keys-are-case-sensitive"),
        pytest.param("body.order.missing IS NULL", True, id="missing-path-is-null"),
        pytest.param("body.order.missing = 1", False, id="missing-path-compares-unknown"),
        pytest.param("body.order.missing <> 1", False, id="missing-path-not-equal-is-unknown"),
        pytest.param("body.order.note IS NULL", True, id="json-null-is-null"),
        pytest.param("EXISTS(body.order.note)", True, id="json-null-exists"),
        pytest.param("EXISTS(body.order.missing)", False, id="missing-path-does-not-exist"),
        pytest.param("body.items.9.sku IS NULL", True, id="index-out-of-range-is-null"),
        pytest.param("body.order.status.deeper IS NULL", True, id="path-through-a-string-is-null"),
        pytest.param("body.order = body.order", False, id="objects-do-not-compare"),
        pytest.param("body.order.id = region OR sys.Label IS NULL", True, id="mixes-with-properties"),
        pytest.param(
            "body.order.status IN ('new', 'shipped') AND body.order.id * 2 = 84", True, id="in-arith"
        ),
        pytest.param("body.order.status LIKE 'ship%'", True, id="like"),
        pytest.param("BODY.order.id = 42", True, id="scope-is-case-insensitive"),
    ],
)
def test_body_references(text: str, expected: bool) -> None:
    assert matches(text, region=1) is expected


@pytest.mark.parametrize("body", [None, "plain text", 17, ["a"]], ids=["none", "string", "number", "array"])
def test_body_that_is_not_an_object_makes_paths_null(body: Any) -> None:
    assert matches("body.order.id IS NULL", body)
    assert not matches("body.order.id = 42", body)


def test_bare_body_is_a_user_property_in_both_dialects() -> None:
    for dialect in Dialect:
        msg = SqlMessage(system={}, user={"body": "b"}, body={"x": 1})
        assert parse_filter("body = 'b'", dialect).matches(msg)


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        pytest.param(parse_filter, "body.order.id = 42", id="filter"),
        pytest.param(parse_action, "SET a = body.order.id", id="action"),
    ],
)
def test_body_references_are_refused_in_the_service_bus_dialect(parse: Any, text: str) -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse(text)
    assert caught.value.reason == "body references need the federator dialect"
    assert caught.value.position == text.index("body")


def test_actions_read_the_body() -> None:
    msg = SqlMessage(system={}, user={}, body=BODY)
    parse_action(
        "SET [repl-order] = body.order.id; SET sys.Label = body.order.status", Dialect.FEDERATOR
    ).apply(msg)
    assert msg.user == {"repl-order": 42}
    assert msg.system == {"Label": "shipped"}


@pytest.mark.parametrize("text", ["SET body.order.id = 1", "REMOVE body.order"])
def test_body_is_read_only(text: str) -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_action(text, Dialect.FEDERATOR)
    assert (caught.value.reason, caught.value.position) == (
        "body references are read-only",
        text.index("body"),
    )


def test_parsed_filters_and_actions_pickle_for_spark_executors() -> None:
    condition = parse_filter("body.order.status LIKE 'ship%' AND [repl-target] IS NULL", Dialect.FEDERATOR)
    action = parse_action("SET [repl-target] = 'hub-b'")
    condition_copy, action_copy = pickle.loads(pickle.dumps((condition, action)))
    msg = SqlMessage(system={}, user={}, body=BODY)
    assert condition_copy == condition and condition_copy.matches(msg)
    action_copy.apply(msg)
    assert not condition_copy.matches(msg)
