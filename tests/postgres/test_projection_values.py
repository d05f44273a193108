"""Event values that PostgreSQL cannot store as they are: the body bytes always stay exact; the jsonb
copy is null when jsonb would refuse it; NUL in text becomes U+FFFD instead of failing the batch."""

from __future__ import annotations

import pytest
from projection_helpers import event, publish, rows, target

from federator_spark.sinks.postgres import body_json


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"a": [1, 2.5, "\\u00e9"]}', '{"a": [1, 2.5, "é"]}'),
        (b"42", "42"),
        (b'"text"', '"text"'),
        (b"plain text", None),
        (b"", None),
        (b'{"a": NaN}', None),
        (b"Infinity", None),
        (b'{"a": "\\u0000"}', None),
        (b'{"\\u0000": 1}', None),
        (b'"\\ud800"', None),
        (b"\xff\xfe{}", None),
    ],
)
def test_the_json_copy_of_a_body(body, expected):
    assert body_json(body) == expected


def test_bodies_jsonb_would_refuse_are_stored_as_bytes_only(uri):
    bodies = [b'{"a": "\\u0000"}', b'{"n": NaN}', b"\x00\x01binary"]
    publish(target("readings", "history"), [event(s, body=b) for s, b in enumerate(bodies)])

    found = rows(uri, "SELECT body, body_json FROM readings ORDER BY sequence_number")
    assert [bytes(r["body"]) for r in found] == bodies
    assert [r["body_json"] for r in found] == [None, None, None]


def test_typed_property_values_are_json_numbers_and_booleans_so_they_can_be_queried_by_value(uri):
    properties = {"n": "7", "ratio": "0.5", "ok": "true", "at": "2026-05-01T12:00:00+00:00", "note": "7"}
    types = {"n": "int", "ratio": "float", "ok": "bool", "at": "timestamp"}
    publish(target("typed", "history"), [event(0, properties=properties, types=types)])

    assert rows(uri, "SELECT properties FROM typed WHERE (properties->>'n')::int > 5") == [
        {"properties": {"n": 7, "ratio": 0.5, "ok": True, "at": "2026-05-01T12:00:00+00:00", "note": "7"}}
    ]


def test_nul_in_keys_and_properties_is_replaced_rather_than_failing_the_batch(uri):
    publish(
        target("latest", "compacted"),
        [event(0, key="dev\x001", properties={"na\x00me": "va\x00lue"})],
    )

    assert rows(uri, "SELECT key, partition_key, properties FROM latest") == [
        {"key": "dev\ufffd1", "partition_key": "dev\ufffd1", "properties": {"na\ufffdme": "va\ufffdlue"}}
    ]
