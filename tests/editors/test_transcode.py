"""transcode: Avro binary ↔ plain JSON with a schema (inline or from a ConfigMap), gzip ↔ plain."""

from __future__ import annotations

import gzip
import io
import json

import fastavro
import pytest
from editor_helpers import apply, build, event, open_step, task_config

from federator_contract.taskconfig import TaskConfigError
from federator_spark.editors.base import Rejected

SCHEMA = {
    "type": "record",
    "name": "Payment",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 2}},
        {"name": "raw", "type": ["null", "bytes"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "previous", "type": ["null", "Digest"]},
    ],
}
RECORD = {
    "id": "p-1",
    "amount": 2.5,
    "note": None,
    "digest": b"\x00\xff",
    "raw": b"\x01\xc3\xa9",
    "tags": ["a"],
    "previous": b"ab",
}
PLAIN_JSON = {
    "id": "p-1",
    "amount": 2.5,
    "note": None,
    "digest": "\u0000\u00ff",
    "raw": "\u0001\u00c3\u00a9",
    "tags": ["a"],
    "previous": "ab",
}


def avro(record):
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(SCHEMA), record)
    return buffer.getvalue()


def transcode(tmp_path, config_maps=None, **spec):
    config = task_config(tmp_path, config_maps=config_maps)
    step, _ = open_step(build({"transcode": spec}, config))
    return step


def test_avro_becomes_plain_json_and_back_to_the_same_bytes(tmp_path):
    to_json = transcode(tmp_path, input="avro", output="json", avroSchema={"inline": json.dumps(SCHEMA)})
    to_avro = transcode(tmp_path, input="json", output="avro", avroSchema={"inline": json.dumps(SCHEMA)})
    as_json = apply(to_json, event(avro(RECORD), properties={"p": "1"}))
    assert as_json is not None and json.loads(as_json.body) == PLAIN_JSON
    assert as_json.properties == {"p": "1"}
    back = apply(to_avro, as_json)
    assert back is not None and back.body == avro(RECORD)


def test_the_schema_can_come_from_a_config_map(tmp_path):
    step = transcode(
        tmp_path,
        config_maps={"schemas/payment.avsc": json.dumps(SCHEMA)},
        input="avro",
        output="json",
        avroSchema={"configMapRef": {"name": "schemas", "key": "payment.avsc"}},
    )
    assert json.loads(apply(step, event(avro(RECORD))).body)["id"] == "p-1"


def test_gzip_is_undone_and_done_around_the_conversion_deterministically(tmp_path):
    step = transcode(
        tmp_path,
        input="json",
        inputCompression="gzip",
        output="avro",
        outputCompression="gzip",
        avroSchema={"inline": json.dumps(SCHEMA)},
    )
    source = event(gzip.compress(json.dumps(PLAIN_JSON).encode()))
    first, second = apply(step, source), apply(step, source)
    assert gzip.decompress(first.body) == avro(RECORD)
    assert first.body == second.body  # no timestamp in the gzip header: replays give the same bytes


@pytest.mark.parametrize(("input_compression", "output_compression"), [("gzip", "none"), ("none", "gzip")])
def test_bytes_only_change_compression(tmp_path, input_compression, output_compression):
    step = transcode(tmp_path, inputCompression=input_compression, outputCompression=output_compression)
    payload = b"\x00 any bytes \xff"
    body = gzip.compress(payload) if input_compression == "gzip" else payload
    result = apply(step, event(body))
    assert (gzip.decompress(result.body) if output_compression == "gzip" else result.body) == payload


@pytest.mark.parametrize(
    ("spec", "body", "reason"),
    [
        ({"input": "avro", "output": "json"}, b"\x02", "body is not Avro of the schema"),
        (
            {"input": "avro", "output": "json"},
            avro(RECORD) + b"junk",
            "body is not Avro of the schema: 4 bytes left over",
        ),
        ({"input": "json", "output": "avro"}, b"{nope", "body is not JSON"),
        (
            {"input": "json", "output": "avro"},
            json.dumps({**PLAIN_JSON, "amount": "x"}).encode(),
            "body does not fit the Avro schema",
        ),
        (
            {"input": "json", "output": "avro"},
            json.dumps({**PLAIN_JSON, "extra": 1}).encode(),
            "body does not fit the Avro schema",
        ),
        ({"input": "json", "output": "avro", "inputCompression": "gzip"}, b"plain", "body is not gzip"),
    ],
)
def test_a_body_that_does_not_decode_is_rejected_with_the_reason(tmp_path, spec, body, reason):
    step = transcode(tmp_path, avroSchema={"inline": json.dumps(SCHEMA)}, **spec)
    with pytest.raises(Rejected, match=reason):
        apply(step, event(body))


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("{", "the Avro schema is not JSON"),
        (
            '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]}',
            "invalid Avro schema: Nope",
        ),
    ],
)
def test_a_bad_avro_schema_fails_the_task_config(tmp_path, schema, message):
    with pytest.raises(TaskConfigError, match=message):
        transcode(tmp_path, input="avro", output="json", avroSchema={"inline": schema})
