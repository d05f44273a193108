"""The receive side's decoding (``sources/amqp_decoding.py``) returns what the SDK's own decoding returns,
for every AMQP type, in small and large encodings, in every message section and in transfer frames."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from azure.eventhub._pyamqp._decode import _DECODE_BY_CONSTRUCTOR, decode_frame, decode_payload
from azure.eventhub._pyamqp._encode import encode_frame, encode_payload, encode_value
from azure.eventhub._pyamqp.message import Header, Message, Properties
from azure.eventhub._pyamqp.performatives import FlowFrame, TransferFrame
from azure.eventhub._pyamqp.types import AMQPTypes

from federator_spark.sources import amqp_decoding


def typed(kind: str, value: Any) -> dict[str, Any]:
    return {"TYPE": kind, "VALUE": value}


LONG_TEXT = "ü" * 200  # 400 bytes: a str32
# Each AMQP type in each of its encodings (the SDK picks the smallest that fits).
VALUES: list[Any] = [
    None,
    True,
    False,
    typed(AMQPTypes.boolean, True),
    typed(AMQPTypes.ubyte, 200),
    typed(AMQPTypes.byte, -100),
    typed(AMQPTypes.ushort, 65_000),
    typed(AMQPTypes.short, -30_000),
    typed(AMQPTypes.uint, 0),
    typed(AMQPTypes.uint, 7),
    typed(AMQPTypes.uint, 4_000_000_000),
    typed(AMQPTypes.ulong, 0),
    typed(AMQPTypes.ulong, 9),
    typed(AMQPTypes.ulong, 2**63 + 5),
    typed(AMQPTypes.int, -5),
    typed(AMQPTypes.int, -2_000_000_000),
    typed(AMQPTypes.long, 100),
    typed(AMQPTypes.long, -(2**40)),
    typed(AMQPTypes.float, 1.5),
    typed(AMQPTypes.double, -2.25),
    typed(AMQPTypes.timestamp, 1_764_300_000_123),
    typed(AMQPTypes.uuid, uuid.UUID(int=12345)),
    b"",
    b"\x00\xff" * 10,
    b"b" * 300,
    "text",
    LONG_TEXT,
    typed(AMQPTypes.symbol, b"x-opt-symbol"),
    typed(AMQPTypes.symbol, b"s" * 300),
    [],
    [1, "two", None, [3.5]],
    list(range(100)),  # over 255 bytes: a list32
    {b"k": "v", "n": 5, "nested": {"deep": [True]}},
    {f"key{i}": "v" * 10 for i in range(30)},  # a map32
    typed(AMQPTypes.array, [typed(AMQPTypes.int, i) for i in range(5)]),
    typed(AMQPTypes.array, []),
    typed(AMQPTypes.described, (typed(AMQPTypes.ulong, 0x24), typed(AMQPTypes.list, []))),
]


def encoded(value: Any) -> bytes:
    output = bytearray()
    encode_value(output, value)
    return bytes(output)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: repr(v)[:40])
def test_every_type_decodes_as_the_sdk_decodes_it(value: Any) -> None:
    data = b"\xaa\xbb" + encoded(value) + b"\xcc"  # read in place, from the middle of a buffer
    expected_rest, expected = _DECODE_BY_CONSTRUCTOR[data[2]](memoryview(data)[3:])
    decoded, end = amqp_decoding.value(data, 2)
    assert decoded == expected
    assert type(decoded) is type(expected)
    assert end == len(data) - len(expected_rest) == len(data) - 1


def test_a_constructor_the_sdk_cannot_decode_is_refused_as_the_sdk_refuses_it() -> None:
    char = b"\x73\x00\x00\x00\x41"  # AMQP char 'A': the SDK has no decoder for it
    with pytest.raises(TypeError):
        decode_payload(memoryview(b"\x00\x53\x77" + char))
    with pytest.raises(TypeError):
        amqp_decoding.message(b"\x00\x53\x77" + char, 0)


def sdk_bytes(message: Message) -> bytes:
    return bytes(encode_payload(bytearray(), message))


MESSAGES = [
    Message(data=[b"body"]),
    Message(
        header=Header(durable=True, priority=4, ttl=60_000, first_acquirer=False, delivery_count=2),
        delivery_annotations={b"x-opt-runtime": 5},
        message_annotations={
            b"x-opt-sequence-number": 123_456_789,
            b"x-opt-offset": b"4096",
            b"x-opt-enqueued-time": typed(AMQPTypes.timestamp, 1_764_300_000_123),
            b"x-opt-partition-key": b"key-1",
        },
        properties=Properties(
            message_id="id-1",
            user_id=b"user",
            to="to",
            subject="subject",
            reply_to="reply",
            correlation_id=uuid.UUID(int=7),
            content_type="application/json",
            content_encoding="gzip",
            absolute_expiry_time=1_764_300_060_000,
            creation_time=1_764_300_000_000,
            group_id="group",
            group_sequence=3,
            reply_to_group_id="rg",
        ),
        application_properties={
            "text": "value",
            "long text": LONG_TEXT,
            "int": 42,
            "negative": -7,
            "big": typed(AMQPTypes.long, 2**40),
            "float": 0.25,
            "flag": True,
            "nothing": None,
            "id": uuid.UUID(int=99),
            "raw": b"\x01\x02",
            "when": datetime(2026, 11, 28, 6, 30, tzinfo=UTC),
        },
        data=[b"x" * 1024, b"y" * 10],
        footer={b"x-opt-footer": "f"},
    ),
    Message(properties=Properties(message_id=12), value={"a": [1, 2]}),
    Message(sequence=[[1, 2], ["three"]]),
    Message(application_properties={f"p{i}": "v" * 20 for i in range(40)}, data=[b"z" * 70_000]),
]


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_a_message_decodes_as_the_sdks_decode_payload_decodes_it(message: Message) -> None:
    data = sdk_bytes(message)
    assert amqp_decoding.message(b"head" + data, 4) == decode_payload(memoryview(data))


def transfer_body(frame: TransferFrame) -> bytes:
    header, body = encode_frame(frame)
    assert header[4] == 2 and body is not None  # no extended header: the body is the performative
    return bytes(body)


@pytest.mark.parametrize(
    "frame",
    [
        TransferFrame(
            handle=0, delivery_id=1, delivery_tag=b"\x01\x00\x00\x00", message_format=0, settled=True
        ),
        TransferFrame(handle=300, delivery_id=70_000, delivery_tag=b"t" * 16, settled=False, more=True),
        TransferFrame(handle=2, delivery_id=None, more=False, batchable=True),
    ],
    ids=["settled", "large numbers, more", "a continuation"],
)
def test_a_transfer_frame_lists_its_fields_as_decode_frame_does(frame: TransferFrame) -> None:
    payload = sdk_bytes(Message(data=[b"p" * 500]))
    body = transfer_body(frame._replace(payload=payload))
    decoded = amqp_decoding.transfer(body)
    assert decoded is not None
    fields, start = decoded
    performative, expected = decode_frame(memoryview(body))
    assert performative == 0x14
    assert fields == expected[:-1]
    assert body[start:] == bytes(expected[-1]) == payload


def test_a_frame_other_than_a_transfer_is_left_alone() -> None:
    flow = FlowFrame(next_incoming_id=0, incoming_window=5, next_outgoing_id=0, outgoing_window=5)
    _, body = encode_frame(flow)
    assert body is not None
    assert amqp_decoding.transfer(bytes(body)) is None
