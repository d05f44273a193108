"""validate: JSON Schema draft 2020-12, inline or from a ConfigMap; the reason names the failing path."""

from __future__ import annotations

import json

import pytest
from editor_helpers import apply, build, event, open_step, task_config

from federator_contract.taskconfig import TaskConfigError
from federator_spark.editors.base import Rejected

SCHEMA = {
    "type": "object",
    "required": ["paymentId", "merchant", "amount"],
    "properties": {
        "paymentId": {"type": "string"},
        "merchant": {"type": "object", "required": ["id"], "properties": {"id": {"$ref": "#/$defs/id"}}},
        "amount": {"type": "number", "minimum": 0},
    },
    "$defs": {"id": {"type": "string", "pattern": "^m-[0-9]+$"}},
}
GOOD = {"paymentId": "p-1", "merchant": {"id": "m-1"}, "amount": 3}


def validator(tmp_path, **spec):
    step, _ = open_step(build({"validate": {"jsonSchema": SCHEMA, **spec}}, task_config(tmp_path)))
    return step


def test_a_valid_event_passes_unchanged(tmp_path):
    valid = event(json.dumps(GOOD))
    assert apply(validator(tmp_path), valid) is valid


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({**GOOD, "amount": -1}, r"^\$\.amount: -1 is less than the minimum of 0$"),
        ({**GOOD, "merchant": {"id": "x"}}, r"^\$\.merchant\.id: 'x' does not match"),
        ({"paymentId": "p-1", "amount": 1}, r"^\$: 'merchant' is a required property$"),
    ],
)
def test_an_invalid_event_is_rejected_naming_the_failing_path(tmp_path, document, reason):
    with pytest.raises(Rejected, match=reason):
        apply(validator(tmp_path), event(json.dumps(document)))


def test_a_body_that_is_not_json_is_invalid(tmp_path):
    with pytest.raises(Rejected, match="body is not JSON"):
        apply(validator(tmp_path), event(b"\x00\x01"))


def test_on_invalid_drop_drops_instead(tmp_path):
    step = validator(tmp_path, onInvalid="drop")
    assert apply(step, event(json.dumps({**GOOD, "amount": -1}))) is None
    assert apply(step, event(b"nope")) is None


def test_the_schema_can_come_from_a_config_map_file(tmp_path):
    config = task_config(tmp_path, config_maps={"schemas/payment.json": json.dumps(SCHEMA)})
    step, _ = open_step(
        build({"validate": {"schemaConfigMapRef": {"name": "schemas", "key": "payment.json"}}}, config)
    )
    assert apply(step, event(json.dumps(GOOD))) is not None
    with pytest.raises(Rejected, match="amount"):
        apply(step, event(json.dumps({**GOOD, "amount": "3"})))


@pytest.mark.parametrize(
    ("config_maps", "message"),
    [
        ({}, "editors\\[0\\]: configMapFiles has no file for ConfigMap key 'schemas/payment.json'"),
        ({"schemas/payment.json": "{not json"}, "ConfigMap key 'schemas/payment.json' is not JSON"),
        ({"schemas/payment.json": '{"type": 12}'}, r"invalid JSON Schema at \$\.type: 12 is not valid"),
        ({"schemas/payment.json": "[]"}, "the JSON Schema is a list, not an object"),
    ],
)
def test_a_missing_or_bad_schema_fails_the_task_config_clearly(tmp_path, config_maps, message):
    config = task_config(tmp_path, config_maps=config_maps)
    with pytest.raises(TaskConfigError, match=message):
        build({"validate": {"schemaConfigMapRef": {"name": "schemas", "key": "payment.json"}}}, config)


PATTERNED = {
    "type": "object",
    "patternProperties": {"^x-[a-z]+$": {"type": "string"}},
    "properties": {"id": {"type": "string", "pattern": "^m-[0-9]+$"}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"id": "m-1", "x-trace": "t"}, None),
        ({"id": "m-1", "x-trace": 1}, r"^\$\['x-trace'\]: 1 is not of type 'string'$"),
        ({"id": "m-1", "trace": "t"}, r"^\$: 'trace' does not match any of the regexes: '\^x-\[a-z\]\+\$'$"),
        # RE2, like JSON Schema's ECMA-262: `$` ends the text (Python's `re` also matches before a final \n).
        ({"id": "m-1\n"}, r"^\$\.id: 'm-1\\n' does not match '\^m-\[0-9\]\+\$'$"),
    ],
)
def test_patterns_and_pattern_properties_match_with_re2(tmp_path, document, reason):
    step, _ = open_step(build({"validate": {"jsonSchema": PATTERNED}}, task_config(tmp_path)))
    if reason is None:
        assert apply(step, event(json.dumps(document))) is not None
    else:
        with pytest.raises(Rejected, match=reason):
            apply(step, event(json.dumps(document)))
