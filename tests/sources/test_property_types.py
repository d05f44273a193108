"""Application property values keep their AMQP type from source to target: rows carry text plus a tag
per typed value; sinks and conditions see the typed value; a value an editor rewrites is its text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from federator_contract.sql import Dialect, parse_filter
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event
from federator_spark.property_types import read, typed

AT = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
SENT = {b"count": 7, b"big": 2**40, "ratio": 0.25, "urgent": False, "at": AT, "id": ID, "note": b"text"}


def event(properties: dict[str, str], types: dict[str, str]) -> Event:
    return Event(
        body=b"{}",
        source="host/hub",
        partition="0",
        partition_count=1,
        sequence_number=1,
        offset="0",
        enqueued_time=AT,
        partition_key=None,
        properties=properties,
        property_types=types,
    )


def test_typed_values_come_back_as_they_were_sent_and_text_stays_text() -> None:
    properties, types = read(SENT)

    assert properties == {
        "count": "7",
        "big": str(2**40),
        "ratio": "0.25",
        "urgent": "false",
        "at": "2026-05-01T12:30:00+00:00",
        "id": str(ID),
        "note": "text",
    }
    assert types == {
        "count": "int",
        "big": "int",
        "ratio": "float",
        "urgent": "bool",
        "at": "timestamp",
        "id": "uuid",
    }
    assert typed(properties, types) == {"count": 7, "big": 2**40, "ratio": 0.25, "urgent": False} | {
        "at": AT,
        "id": ID,
        "note": "text",
    }


def test_an_amqp_null_is_kept_as_empty_text() -> None:
    assert read({"gone": None}) == ({"gone": ""}, {})


def test_a_rewritten_value_loses_its_type_and_an_unparseable_one_stays_text() -> None:
    properties, types = read({"count": 7, "level": 3})
    edited = event(properties, types).edited(properties={**properties, "level": "4", "extra": "1"})

    assert edited.property_types == {"count": "int"}
    assert edited.typed_properties() == {"count": 7, "level": "4", "extra": "1"}
    assert typed({"count": "seven"}, {"count": "int"}) == {"count": "seven"}


@pytest.mark.parametrize(
    ("condition", "matches"),
    [
        ("count > 5", True),
        ("count = 7 AND urgent = FALSE", True),
        ("ratio < 0.5", True),
        ("note = 'text'", True),
        ("count = '7'", False),  # a number is not a string, in Service Bus SQL as here
    ],
)
def test_conditions_compare_typed_values_as_service_bus_does(condition: str, matches: bool) -> None:
    message = EventMessage(event(*read(SENT)))

    assert parse_filter(condition, Dialect.FEDERATOR).matches(message) is matches
