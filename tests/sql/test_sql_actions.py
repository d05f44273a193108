"""SQL rule actions: SET and REMOVE on the message copy a subscription receives."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federator_contract.sql import SqlMessage, parse_action, parse_filter


def applied(text: str, system: dict[str, Any] | None = None, **user: Any) -> SqlMessage:
    msg = SqlMessage(system=dict(system or {}), user=user)
    parse_action(text).apply(msg)
    return msg


@pytest.mark.parametrize(
    ("text", "before", "after"),
    [
        pytest.param("SET a = 1", {}, {"a": 1}, id="set-creates"),
        pytest.param("SET a = 'x'", {"a": 1}, {"a": "x"}, id="set-replaces"),
        pytest.param("SET user.a = TRUE", {}, {"a": True}, id="user-scope"),
        pytest.param("SET [repl-target] = 'hub-b'", {}, {"repl-target": "hub-b"}, id="delimited"),
        pytest.param("SET a = b + 1", {"b": 41}, {"a": 42, "b": 41}, id="expression-reads-properties"),
        pytest.param("SET a = b + 1", {}, {"a": None}, id="unknown-operand-sets-null"),
        pytest.param("SET a = NULL", {"a": 1}, {"a": None}, id="set-null"),
        pytest.param(
            "SET quantity = quantity / 2", {"quantity": 5}, {"quantity": 2}, id="docs-long-division"
        ),
        pytest.param("SET Quantity = 1", {"quantity": 5}, {"quantity": 1}, id="existing-name-keeps-its-case"),
        pytest.param("SET price = 3", {"price": 2.5}, {"price": 3.0}, id="long-converts-to-existing-double"),
        pytest.param("SET a = 1; SET b = a + 1", {}, {"a": 1, "b": 2}, id="statements-run-in-order"),
        pytest.param("SET a = 1 SET b = 2", {}, {"a": 1, "b": 2}, id="semicolon-is-optional"),
        pytest.param("SET a = 1;", {}, {"a": 1}, id="trailing-semicolon"),
        pytest.param("REMOVE a", {"a": 1, "b": 2}, {"b": 2}, id="remove"),
        pytest.param("REMOVE A", {"a": 1}, {}, id="remove-is-case-insensitive"),
        pytest.param("REMOVE missing", {"a": 1}, {"a": 1}, id="remove-missing-is-harmless"),
        pytest.param("remove a; set b = 2", {"a": 1}, {"b": 2}, id="keywords-case-insensitive"),
        pytest.param(
            "SET quantity = quantity / 2; REMOVE priority;SET sys.CorrelationId = 'low';",
            {"quantity": 10, "priority": "high"},
            {"quantity": 5},
            id="docs-example",
        ),
    ],
)
def test_user_properties(text: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    assert applied(text, **before).user == after


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        pytest.param("SET sys.Label = 'x'", "Label", "x", id="label"),
        pytest.param("SET sys.Subject = 'x'", "Label", "x", id="subject-is-label"),
        pytest.param("SET sys.To = 'queue-b'", "To", "queue-b", id="to"),
        pytest.param("SET sys.ReplyTo = 'replies'", "ReplyTo", "replies", id="reply-to"),
        pytest.param("SET sys.ReplyToSessionId = 's'", "ReplyToSessionId", "s", id="reply-to-session-id"),
        pytest.param(
            "SET sys.ContentType = 'application/json'", "ContentType", "application/json", id="type"
        ),
        pytest.param("SET sys.CorrelationId = 'low'", "CorrelationId", "low", id="correlation-id"),
        pytest.param("SET sys.SessionId = 'session-1'", "SessionId", "session-1", id="session-id"),
        pytest.param("SET sys.MessageId = 'm-2'", "MessageId", "m-2", id="message-id"),
        pytest.param("SET sys.PartitionKey = 'k'", "PartitionKey", "k", id="partition-key"),
        pytest.param("SET sys.TimeToLive = '0:2:0'", "TimeToLive", timedelta(minutes=2), id="federation-ttl"),
        pytest.param(
            "SET sys.TimeToLive = '00:00:30'", "TimeToLive", timedelta(seconds=30), id="ttl-hh-mm-ss"
        ),
        pytest.param(
            "SET sys.TimeToLive = '1.02:03:04.5'",
            "TimeToLive",
            timedelta(days=1, hours=2, minutes=3, seconds=4.5),
            id="ttl-days-and-fraction",
        ),
        pytest.param(
            "SET sys.TimeToLive = ttl", "TimeToLive", timedelta(hours=1), id="ttl-from-string-property"
        ),
        pytest.param(
            "SET sys.ScheduledEnqueueTimeUtc = '2030-01-01T00:00:00Z'",
            "ScheduledEnqueueTimeUtc",
            datetime(2030, 1, 1, tzinfo=UTC),
            id="scheduled-enqueue-time",
        ),
        pytest.param("SET sys.Label = sys.Label + '-copy'", "Label", "old-copy", id="label-from-itself"),
        pytest.param("SET sys.Label = count", "Label", "7", id="number-converts-to-string"),
        pytest.param("set SYS.label = 'x'", "Label", "x", id="case-insensitive"),
    ],
)
def test_writable_system_properties(text: str, name: str, expected: Any) -> None:
    assert applied(text, {"Label": "old"}, ttl="1:00:00", count=7).system[name] == expected


def test_set_message_id_from_newid() -> None:
    msg = applied("SET sys.MessageId = newid()", {"MessageId": "m-1"})
    assert str(uuid.UUID(msg.system["MessageId"])) == msg.system["MessageId"]


def test_setting_a_system_property_to_null_unsets_it() -> None:
    assert applied("SET sys.Label = NULL", {"Label": "x", "To": "y"}).system == {"To": "y"}
    assert applied("SET sys.ReplyTo = missing", {"ReplyTo": "x"}).system == {}


def test_remove_system_property() -> None:
    assert applied("REMOVE sys.TimeToLive", {"TimeToLive": timedelta(1), "To": "y"}).system == {"To": "y"}


def test_value_that_cannot_convert_leaves_system_property_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="federator_contract.sql.actions"):
        msg = applied("SET sys.TimeToLive = ttl", {"TimeToLive": timedelta(minutes=1)}, ttl="soon")
    assert msg.system == {"TimeToLive": timedelta(minutes=1)}
    assert "sys.TimeToLive unchanged" in caplog.text


def test_all_active_replication_rule_stops_bouncing() -> None:
    """ServiceBusMirror allActive: filter ``replication IS NULL``, action ``SET replication = 1``."""
    rule_filter, rule_action = parse_filter("replication IS NULL"), parse_action("SET replication = 1")
    fresh = SqlMessage(system={"MessageId": "m-1"}, user={"order": 7})
    assert rule_filter.matches(fresh)
    rule_action.apply(fresh)
    assert fresh.user == {"order": 7, "replication": 1}
    assert not rule_filter.matches(fresh), "a replicated copy must not be eligible to replicate back"


def test_active_passive_rule_sets_the_failover_window() -> None:
    rule_action = parse_action("SET replication = 1; SET sys.TimeToLive = '0:2:0'")
    msg = SqlMessage(system={"TimeToLive": timedelta(days=14)}, user={})
    rule_action.apply(msg)
    assert msg.system["TimeToLive"] == timedelta(minutes=2)
    assert msg.user["replication"] == 1


def test_actions_keep_their_text() -> None:
    assert parse_action("SET a = 1").text == "SET a = 1"
