"""enrich: static properties, and a ConfigMap table lookup keyed by a property, sys.<Name> or body.<path>."""

from __future__ import annotations

import json

import pytest
from editor_helpers import apply, build, event, open_step, task_config

from federator_contract.taskconfig import TaskConfigError
from federator_spark.editors.base import Rejected

TABLE = {"m-1": "eu", "m-2": "us", "42": 7, "flag": True, "none": None, "nested": {"a": [1]}}
REF = {"name": "merchant-regions", "key": "regions.json"}


def enrich(tmp_path, lookup=None, **spec):
    config = task_config(tmp_path, config_maps={"merchant-regions/regions.json": json.dumps(TABLE)})
    if lookup is not None:
        spec["lookup"] = {"configMapRef": REF, "into": "region", **lookup}
    step, _ = open_step(build({"enrich": spec}, config))
    return step


def test_static_properties_are_added_and_win_over_existing_ones(tmp_path):
    original = event(properties={"pipeline": "old", "keep": "1"})
    result = apply(enrich(tmp_path, properties={"pipeline": "curated", "tier": "gold"}), original)
    assert result is not None and result.properties == {"pipeline": "curated", "keep": "1", "tier": "gold"}
    assert original.properties == {"pipeline": "old", "keep": "1"}


@pytest.mark.parametrize(
    ("key_from", "source", "expected"),
    [
        ("body.merchant.id", event('{"merchant": {"id": "m-2"}}'), "us"),
        ("merchant", event(properties={"merchant": "m-1"}), "eu"),
        (
            "MERCHANT",
            event(properties={"merchant": "m-1"}),
            "eu",
        ),  # names are case-insensitive, as in conditions
        ("sys.MessageId", event(system={"message_id": "m-2"}), "us"),
        ("body.n", event('{"n": 42}'), "7"),  # numbers on both sides are compared as text
        ("body.k", event('{"k": "flag"}'), "true"),
        ("body.k", event('{"k": "nested"}'), '{"a":[1]}'),
    ],
)
def test_the_lookup_key_comes_from_a_property_a_system_property_or_the_body(
    tmp_path, key_from, source, expected
):
    result = apply(enrich(tmp_path, lookup={"keyFrom": key_from}), source)
    assert result is not None and result.properties["region"] == expected


@pytest.mark.parametrize(
    "source",
    [event('{"merchant": "m-9"}'), event('{"other": 1}'), event("not json"), event('{"merchant": "none"}')],
)
def test_a_missing_key_is_skipped_dropped_or_dead_lettered(tmp_path, source):
    skipped = apply(enrich(tmp_path, lookup={"keyFrom": "body.merchant"}, properties={"s": "1"}), source)
    assert skipped is not None and skipped.properties == {"s": "1"}
    assert apply(enrich(tmp_path, lookup={"keyFrom": "body.merchant", "onMissing": "drop"}), source) is None
    with pytest.raises(Rejected, match=r"lookup key body\.merchant"):
        apply(enrich(tmp_path, lookup={"keyFrom": "body.merchant", "onMissing": "deadLetter"}), source)


def test_the_dead_letter_reason_names_the_key_and_the_table(tmp_path):
    step = enrich(tmp_path, lookup={"keyFrom": "body.merchant", "onMissing": "deadLetter"})
    with pytest.raises(
        Rejected, match=r"^lookup key body.merchant = 'm-9' is not in merchant-regions/regions.json$"
    ):
        apply(step, event('{"merchant": "m-9"}'))
    with pytest.raises(Rejected, match=r"^lookup key body.merchant has no value$"):
        apply(step, event("{}"))


def test_an_event_without_changes_is_passed_on_as_is(tmp_path):
    original = event('{"merchant": "m-9"}')
    assert apply(enrich(tmp_path, lookup={"keyFrom": "body.merchant"}), original) is original


@pytest.mark.parametrize(
    ("table", "key_from", "message"),
    [
        ("[1, 2]", "body.m", "lookup table merchant-regions/regions.json is not a JSON object"),
        ("{}", "sys.NoSuchThing", "keyFrom 'sys.NoSuchThing': unknown system property 'NoSuchThing'"),
    ],
)
def test_a_bad_table_or_key_reference_fails_the_task_config(tmp_path, table, key_from, message):
    config = task_config(tmp_path, config_maps={"merchant-regions/regions.json": table})
    spec = {"enrich": {"lookup": {"configMapRef": REF, "keyFrom": key_from, "into": "region"}}}
    with pytest.raises(TaskConfigError, match=message):
        build(spec, config)
