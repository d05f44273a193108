""".NET TimeSpan strings, as rule actions write them into sys.TimeToLive."""

from __future__ import annotations

from datetime import timedelta

import pytest

from federator_contract.sql import SYSTEM_PROPERTIES, format_timespan, parse_timespan


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0:2:0", timedelta(minutes=2), id="federation-docs-form"),
        pytest.param("00:02:00", timedelta(minutes=2), id="hh-mm-ss"),
        pytest.param("1:30", timedelta(hours=1, minutes=30), id="hours-minutes"),
        pytest.param("3", timedelta(days=3), id="days-only"),
        pytest.param("1.02:03:04", timedelta(days=1, hours=2, minutes=3, seconds=4), id="days-dot"),
        pytest.param("1:02:03:04", timedelta(days=1, hours=2, minutes=3, seconds=4), id="days-colon"),
        pytest.param("0:0:1.5", timedelta(seconds=1.5), id="fraction"),
        pytest.param("0:0:0.0000010", timedelta(microseconds=1), id="seven-digit-ticks"),
        pytest.param("-0:5:0", timedelta(minutes=-5), id="negative"),
        pytest.param("  0:2:0 ", timedelta(minutes=2), id="surrounding-space"),
        pytest.param("24:00:00", None, id="hours-out-of-range"),
        pytest.param("0:60:00", None, id="minutes-out-of-range"),
        pytest.param("0:0:60", None, id="seconds-out-of-range"),
        pytest.param("0:0:1.12345678", None, id="too-many-fraction-digits"),
        pytest.param("PT2M", None, id="iso-8601-is-not-a-timespan"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_timespan(text: str, expected: timedelta | None) -> None:
    assert parse_timespan(text) == expected


@pytest.mark.parametrize(
    ("span", "text"),
    [
        pytest.param(timedelta(minutes=2), "00:02:00", id="minutes"),
        pytest.param(timedelta(days=1, hours=2, minutes=3, seconds=4), "1.02:03:04", id="days"),
        pytest.param(timedelta(seconds=1, microseconds=500), "00:00:01.0005000", id="fraction"),
        pytest.param(timedelta(minutes=-5), "-00:05:00", id="negative"),
    ],
)
def test_format_timespan_round_trips(span: timedelta, text: str) -> None:
    assert format_timespan(span) == text
    assert parse_timespan(text) == span


def test_writable_system_properties_are_the_documented_ones() -> None:
    writable = {name for name, prop in SYSTEM_PROPERTIES.items() if prop.writable}
    assert writable == {
        "ContentType",
        "CorrelationId",
        "ForcePersistence",
        "Label",
        "MessageId",
        "PartitionKey",
        "ReplyTo",
        "ReplyToSessionId",
        "ScheduledEnqueueTimeUtc",
        "SessionId",
        "TimeToLive",
        "To",
        "ViaPartitionKey",
    }
    assert not SYSTEM_PROPERTIES["SequenceNumber"].writable
