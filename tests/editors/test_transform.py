"""transform: project, then rename, then flatten a JSON object body; anything else is rejected."""

from __future__ import annotations

import json

import pytest
from editor_helpers import apply, build, event, open_step, task_config

from federator_spark.editors.base import Rejected

ORDER = {
    "id": "o-1",
    "merchant": {"id": "m-1", "name": "Shop", "address": {"city": "Oslo"}},
    "amount": 5,
    "x": 1,
}


def transform(tmp_path, **spec):
    step, _ = open_step(build({"transform": spec}, task_config(tmp_path)))
    return step


def body_of(result):
    assert result is not None
    return json.loads(result.body)


def test_project_keeps_only_the_listed_paths_and_skips_absent_ones(tmp_path):
    step = transform(tmp_path, project=["id", "merchant.address.city", "missing.path"])
    assert body_of(apply(step, event(json.dumps(ORDER)))) == {
        "id": "o-1",
        "merchant": {"address": {"city": "Oslo"}},
    }


def test_project_rename_and_flatten_apply_in_that_order(tmp_path):
    step = transform(
        tmp_path,
        project=["id", "merchant.id", "merchant.address", "amount"],
        rename={"merchant.id": "merchantId", "amount": "totals.amount"},
        flatten={"separator": "."},
    )
    assert body_of(apply(step, event(json.dumps(ORDER)))) == {
        "id": "o-1",
        "merchant.address.city": "Oslo",
        "merchantId": "m-1",
        "totals.amount": 5,
    }


def test_flatten_uses_underscore_by_default_and_keeps_arrays_and_empty_objects(tmp_path):
    step = transform(tmp_path, flatten={})
    result = apply(step, event(json.dumps({"a": {"b": {"c": 1}, "list": [{"d": 2}], "empty": {}}})))
    assert body_of(result) == {"a_b_c": 1, "a_list": [{"d": 2}], "a_empty": {}}


def test_a_flatten_that_would_merge_two_fields_is_rejected(tmp_path):
    step = transform(tmp_path, flatten={})
    with pytest.raises(Rejected, match="two fields become 'a_b'"):
        apply(step, event(json.dumps({"a_b": 1, "a": {"b": 2}})))


def test_rename_of_an_absent_field_changes_nothing_and_into_a_scalar_is_rejected(tmp_path):
    assert body_of(apply(transform(tmp_path, rename={"nope": "x"}), event('{"a": 1}'))) == {"a": 1}
    with pytest.raises(Rejected, match=r"cannot write amount\.value: amount is a JSON int"):
        apply(transform(tmp_path, rename={"id": "amount.value"}), event(json.dumps(ORDER)))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "body is not JSON: Expecting value"),
        (b"\xff\xfe\x00garbage", "body is not JSON"),
        (b"[1, 2]", "body is a JSON list, not an object"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_rejected_with_the_reason(tmp_path, body, reason):
    with pytest.raises(Rejected, match=reason):
        apply(transform(tmp_path, flatten={}), event(body))


def test_the_input_event_and_its_document_are_left_untouched(tmp_path):
    original = event(json.dumps(ORDER), properties={"p": "1"})
    document = original.json()
    step = transform(tmp_path, rename={"merchant.address.city": "city"}, flatten={})
    result = apply(step, original)
    assert result is not original
    assert original.json() is document and document == ORDER
    assert json.loads(original.body) == ORDER
    assert result is not None and result.json() == json.loads(result.body)  # handed over, not re-decoded
    assert result.properties == {"p": "1"} and result.sequence_number == original.sequence_number
