"""Correlation filters: every set field must equal the message's property."""

from __future__ import annotations

import pytest

from federator_contract.sql import CorrelationFilter, SqlMessage

MESSAGE = SqlMessage(
    system={
        "CorrelationId": "high",
        "MessageId": "m-1",
        "To": "Store5",
        "ReplyTo": "johndoe@contoso.com",
        "Label": "Important",
        "SessionId": "s-1",
        "ReplyToSessionId": "rs-1",
        "ContentType": "application/json",
    },
    user={"color": "Red", "quantity": 10, "active": True},
)


@pytest.mark.parametrize(
    ("correlation", "expected"),
    [
        pytest.param(CorrelationFilter(correlation_id="high"), True, id="correlation-id"),
        pytest.param(CorrelationFilter(correlation_id="low"), False, id="correlation-id-differs"),
        pytest.param(CorrelationFilter(correlation_id="HIGH"), False, id="strings-are-case-sensitive"),
        pytest.param(CorrelationFilter(message_id="m-1"), True, id="message-id"),
        pytest.param(CorrelationFilter(to="Store5"), True, id="to"),
        pytest.param(CorrelationFilter(reply_to="johndoe@contoso.com"), True, id="reply-to"),
        pytest.param(CorrelationFilter(label="Important"), True, id="label"),
        pytest.param(CorrelationFilter(session_id="s-1"), True, id="session-id"),
        pytest.param(CorrelationFilter(reply_to_session_id="rs-1"), True, id="reply-to-session-id"),
        pytest.param(CorrelationFilter(content_type="application/json"), True, id="content-type"),
        pytest.param(CorrelationFilter(properties={"color": "Red"}), True, id="user-property"),
        pytest.param(CorrelationFilter(properties={"COLOR": "Red"}), True, id="user-property-name-any-case"),
        pytest.param(CorrelationFilter(properties={"color": "red"}), False, id="user-value-case-sensitive"),
        pytest.param(CorrelationFilter(properties={"quantity": 10.0}), True, id="numbers-promote"),
        pytest.param(
            CorrelationFilter(properties={"quantity": "10"}), False, id="no-string-number-conversion"
        ),
        pytest.param(CorrelationFilter(properties={"active": 1}), False, id="boolean-is-not-one"),
        pytest.param(
            CorrelationFilter(properties={"missing": None}), False, id="missing-property-never-matches"
        ),
        pytest.param(
            CorrelationFilter(label="Important", reply_to="johndoe@contoso.com", properties={"color": "Red"}),
            True,
            id="docs-example-all-match",
        ),
        pytest.param(
            CorrelationFilter(label="Important", reply_to="someone@else.com", properties={"color": "Red"}),
            False,
            id="one-mismatch-fails-the-and",
        ),
        pytest.param(CorrelationFilter(), True, id="nothing-set-matches-all"),
    ],
)
def test_correlation_filter(correlation: CorrelationFilter, expected: bool) -> None:
    assert correlation.matches(MESSAGE) is expected


def test_set_field_against_unset_system_property_fails() -> None:
    assert not CorrelationFilter(correlation_id="high").matches(SqlMessage(system={}, user={}))


def test_correlation_filters_are_hashable_values() -> None:
    same = {
        CorrelationFilter(label="a", properties={"x": 1}),
        CorrelationFilter(label="a", properties={"x": 1}),
    }
    assert len(same) == 1
    assert CorrelationFilter(label="a") != CorrelationFilter(label="b")
