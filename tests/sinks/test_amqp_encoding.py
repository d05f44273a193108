"""An event encoded once by the Event Hubs sink is the message the SDK would have sent: the same
sections when decoded, and application properties byte for byte (so every value keeps its AMQP type),
and it fills an ``EventDataBatch`` to the same size limit as ``EventDataBatch.add``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from azure.eventhub import EventData, EventDataBatch
from azure.eventhub._pyamqp._decode import decode_payload
from azure.eventhub._pyamqp._encode import encode_payload
from azure.eventhub._transport._pyamqp_transport import PyamqpTransport

from federator_spark.property_types import for_amqp
from federator_spark.sinks.amqp_encoding import append, encode_event

BODY = b'{"id": 1}' + b"x" * 1000

PROPERTIES: list[dict[str, Any]] = [
    {},
    {"repl-sequence": "12", "repl-source-id": "ns.servicebus.windows.net/hub/0/12"},
    {"small": 5, "negative": -128, "int": 70_000, "long": 2**40, "min-long": -(2**63)},
    {"flag": True, "off": False, "ratio": 0.25, "id": uuid.UUID(int=7)},
    {"at": datetime(2026, 11, 25, 12, 30, 5, 123456, tzinfo=UTC)},
    {"long-text": "é" * 200, "binary": b"\x00\x01", "null": None},
    {f"p{i}": "v" * 20 for i in range(40)},  # a map beyond 255 bytes
]


def sdk_encoding(body: bytes, properties: dict[str, Any], system: dict[str, str], key: str | None) -> bytes:
    data = EventData(body)
    data.properties = for_amqp(properties)
    for name, value in system.items():
        setattr(data, name, value)
    if key is not None:
        data.raw_amqp_message.annotations[b"x-opt-partition-key"] = key
    out = bytearray()
    encode_payload(out, PyamqpTransport.to_outgoing_amqp_message(data.raw_amqp_message))
    return bytes(out)


def application_properties_section(encoded: bytes) -> bytes:
    start = encoded.index(b"\x00\x53\x74")
    return encoded[start : encoded.index(b"\x00\x53\x75", start)]


@pytest.mark.parametrize("properties", PROPERTIES)
@pytest.mark.parametrize(
    ("system", "key"),
    [
        ({}, None),
        ({"message_id": "m-1"}, "device-7"),
        ({"message_id": "m-1", "correlation_id": "c-9", "content_type": "application/json"}, "k"),
        ({"content_type": "text/plain"}, None),
    ],
)
def test_an_encoded_event_decodes_as_the_sdks_encoding_of_it(properties, system, key) -> None:
    ours = encode_event(BODY, properties, system, key)
    theirs = sdk_encoding(BODY, properties, system, key)

    assert decode_payload(memoryview(ours)) == decode_payload(memoryview(theirs))
    if properties:
        assert application_properties_section(ours) == application_properties_section(theirs)


def test_a_large_body_and_a_long_partition_key_use_the_32_bit_forms() -> None:
    body, key = b"b" * 70_000, "k" * 300
    ours = encode_event(body, {}, None, key)
    assert decode_payload(memoryview(ours)) == decode_payload(memoryview(sdk_encoding(body, {}, {}, key)))


def test_a_value_of_an_unknown_type_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="cannot encode a property value of type list"):
        encode_event(BODY, {"bad": [1]}, None, None)


def test_a_batch_takes_as_many_encoded_events_as_event_data_batch_add_takes() -> None:
    ours, theirs = EventDataBatch(max_size_in_bytes=20_000), EventDataBatch(max_size_in_bytes=20_000)
    properties = {"repl-sequence": "12"}
    while append(ours, encode_event(BODY, properties)):
        pass
    with pytest.raises(ValueError, match="size limit"):
        while True:
            data = EventData(BODY)
            data.properties = properties
            theirs.add(data)

    assert len(ours) == len(theirs) > 0
    assert ours._size == theirs._size
    assert [bytes(m) for m in ours._message.data] == [bytes(m) for m in theirs._message.data]
