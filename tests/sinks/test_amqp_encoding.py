"""A message encoded once by a sink is, byte for byte, the message the SDK would have sent: an event as
``EventData`` encodes it, a Service Bus message as ``ServiceBusMessage`` does (its header, TTL stamps and
properties section included); and a batch filled by ``append`` is the batch the SDK's ``add`` fills, to
the same size limit (a Service Bus batch's envelope included)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.eventhub import EventData, EventDataBatch
from azure.eventhub._pyamqp._encode import encode_payload as encode_event_hubs_payload
from azure.eventhub._transport._pyamqp_transport import PyamqpTransport as EventHubsTransport
from azure.servicebus import ServiceBusMessage, ServiceBusMessageBatch
from azure.servicebus._pyamqp._decode import decode_payload
from azure.servicebus._pyamqp._encode import encode_payload
from azure.servicebus._pyamqp.message import BatchMessage
from azure.servicebus._transport._pyamqp_transport import PyamqpTransport as ServiceBusTransport
from azure.servicebus.exceptions import MessageSizeExceededError

from federator_spark.sinks.amqp_encoding import append, encode_message, header_ttl
from federator_spark.sinks.servicebus import append_message

BODY = b'{"id": 1}' + b"x" * 1000

PROPERTIES: list[dict[str, Any]] = [
    {},
    {"repl-sequence": "12", "repl-source-id": "ns.servicebus.windows.net/hub/0/12"},
    {"small": 5, "negative": -128, "int": 70_000, "long": 2**40, "min-long": -(2**63)},
    {"flag": True, "off": False, "ratio": 0.25, "id": uuid.UUID(int=7)},
    {"at": datetime(2026, 11, 25, 12, 30, 5, 123456, tzinfo=UTC)},
    {"long-text": "é" * 200, "null": None},
    {f"p{i}": "v" * 20 for i in range(40)},  # a map beyond 255 bytes
]

# The properties a Service Bus message gets from the sink: MessageId and SessionId always.
SERVICE_BUS_FIELDS: list[dict[str, str]] = [
    {"message_id": "host/src/0/12", "group_id": "0"},
    {
        "message_id": "m-1",
        "group_id": "device-7",
        "content_type": "application/json",
        "correlation_id": "c-9",
        "subject": "order",
        "to": "orders",
        "reply_to": "replies",
    },
    {  # the 32-bit forms: strings beyond 255 bytes, a properties list beyond 255 bytes
        "message_id": "é" * 128,
        "group_id": "k" * 128,
        "content_type": "text/plain; charset=utf-8",
        "correlation_id": "c" * 300,
        "subject": "s" * 300,
        "to": "t" * 300,
        "reply_to": "r" * 300,
    },
    {"message_id": "m-2", "group_id": "", "subject": ""},  # an empty string is a value, not a null
]


def sdk_properties(properties: dict[str, Any]) -> dict[str | bytes, Any]:
    """Property values as the SDKs take them: a plain int beyond 32 bits spelled out as a long (their
    encoder fails on it otherwise)."""
    return {
        name: {"TYPE": "LONG", "VALUE": value}
        if type(value) is int and not -(2**31) <= value < 2**31
        else value
        for name, value in properties.items()
    }


def event_data_encoding(
    body: bytes, properties: dict[str, Any], system: dict[str, str], key: str | None
) -> bytes:
    data = EventData(body)
    data.properties = sdk_properties(properties)
    for name, value in system.items():
        setattr(data, name, value)
    if key is not None:
        data.raw_amqp_message.annotations[b"x-opt-partition-key"] = key
    out = bytearray()
    encode_event_hubs_payload(out, EventHubsTransport.to_outgoing_amqp_message(data.raw_amqp_message))
    return bytes(out)


def service_bus_message(
    body: bytes, properties: dict[str, Any], fields: dict[str, str], ttl_seconds: float | None
) -> ServiceBusMessage:
    """The message the sink built before it encoded messages itself."""
    return ServiceBusMessage(
        body,
        application_properties=sdk_properties(properties),
        message_id=fields["message_id"],
        session_id=fields["group_id"],
        partition_key=fields["group_id"],
        content_type=fields.get("content_type"),
        correlation_id=fields.get("correlation_id"),
        subject=fields.get("subject"),
        to=fields.get("to"),
        reply_to=fields.get("reply_to"),
        time_to_live=None if ttl_seconds is None else timedelta(seconds=ttl_seconds),
    )


def service_bus_encoding(message: ServiceBusMessage) -> bytes:
    out = bytearray()
    encode_payload(out, ServiceBusTransport.to_outgoing_amqp_message(message.raw_amqp_message))
    return bytes(out)


def encoded(
    body: bytes, properties: dict[str, Any], fields: dict[str, str], ttl_seconds: float | None
) -> bytes:
    """What the Service Bus sink encodes: the SessionId is also the partition key."""
    ttl = None if ttl_seconds is None else header_ttl(ttl_seconds)
    return encode_message(body, properties, fields, fields["group_id"], ttl)


@pytest.fixture
def stopped_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The clock the SDK stamps a TTL's creation and expiry times with, stopped for both encodings."""
    monkeypatch.setattr(time, "mktime", lambda _: 1_795_000_000.0)
    yield


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
def test_an_encoded_event_is_the_sdks_encoding_of_it(properties, system, key) -> None:
    ours = encode_message(BODY, properties, system, key)

    assert ours == event_data_encoding(BODY, properties, system, key)


def test_a_binary_property_value_is_encoded_as_binary() -> None:
    properties = {"binary": b"\x00\x01"}
    assert encode_message(BODY, properties) == event_data_encoding(BODY, properties, {}, None)


def test_a_large_body_and_a_long_partition_key_use_the_32_bit_forms() -> None:
    body, key = b"b" * 70_000, "k" * 300
    assert encode_message(body, {}, None, key) == event_data_encoding(body, {}, {}, key)


def test_a_value_of_an_unknown_type_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="cannot encode a property value of type list"):
        encode_message(BODY, {"bad": [1]}, None, None)


@pytest.mark.usefixtures("stopped_clock")
@pytest.mark.parametrize("properties", PROPERTIES)
@pytest.mark.parametrize("fields", SERVICE_BUS_FIELDS)
@pytest.mark.parametrize("ttl_seconds", [None, 0, 3600, 4_294_967])
def test_an_encoded_service_bus_message_is_the_sdks_encoding_of_it(properties, fields, ttl_seconds) -> None:
    ours = encoded(BODY, properties, fields, ttl_seconds)

    assert ours == service_bus_encoding(service_bus_message(BODY, properties, fields, ttl_seconds))


@pytest.mark.usefixtures("stopped_clock")
@pytest.mark.parametrize("body", [b"", b"x", b"b" * 70_000])
def test_a_service_bus_message_of_any_body_size_is_the_sdks_encoding_of_it(body) -> None:
    fields = SERVICE_BUS_FIELDS[1]
    assert encoded(body, {}, fields, 60) == service_bus_encoding(service_bus_message(body, {}, fields, 60))


def test_a_ttl_is_stamped_with_the_sdks_clock() -> None:
    fields = SERVICE_BUS_FIELDS[0]
    theirs = decode_payload(memoryview(service_bus_encoding(service_bus_message(BODY, {}, fields, 60))))
    ours = decode_payload(memoryview(encoded(BODY, {}, fields, 60)))

    created, expires = ours.properties.creation_time, ours.properties.absolute_expiry_time
    assert abs(created - theirs.properties.creation_time) <= 1000  # the same clock, read a moment later
    assert expires - created == 60_000


@pytest.mark.parametrize("seconds", [0.5, 2.9999999, 86_400, 1.2096e6, 4_294_967.295])
def test_a_ttl_is_whole_seconds_in_milliseconds_as_the_sdk_writes_it(seconds) -> None:
    message = ServiceBusMessage(b"", time_to_live=timedelta(seconds=seconds))
    assert header_ttl(seconds) == message.raw_amqp_message.header.time_to_live


def test_a_ttl_beyond_what_the_header_holds_is_the_longest_it_holds() -> None:
    sixty_days = 60 * 86_400
    with pytest.raises(ValueError, match="unsigned int"):  # where the SDK gives up
        ServiceBusMessageBatch().add_message(service_bus_message(BODY, {}, SERVICE_BUS_FIELDS[0], sixty_days))

    ours = decode_payload(memoryview(encoded(BODY, {}, SERVICE_BUS_FIELDS[0], sixty_days)))
    assert ours.header.ttl == 2**32 - 1


def test_an_event_data_batch_filled_by_append_is_the_batch_add_fills() -> None:
    ours, theirs = EventDataBatch(max_size_in_bytes=20_000), EventDataBatch(max_size_in_bytes=20_000)
    properties = {"repl-sequence": "12"}
    while append(ours, encode_message(BODY, properties)):
        pass
    with pytest.raises(ValueError, match="size limit"):
        while True:
            data = EventData(BODY)
            data.properties = properties
            theirs.add(data)

    assert len(ours) == len(theirs) > 0
    assert ours._size == theirs._size
    assert [bytes(m) for m in ours._message.data] == [bytes(m) for m in theirs._message.data]


@pytest.mark.usefixtures("stopped_clock")
def test_a_service_bus_batch_filled_by_append_is_the_batch_add_message_fills() -> None:
    """Bodies on either side of 256 bytes (the batch counts 5 or 8 bytes of framing for a message), with
    and without a TTL; the envelope carries the first message's MessageId, SessionId and partition key."""
    ours, theirs = (
        ServiceBusMessageBatch(max_size_in_bytes=40_000),
        ServiceBusMessageBatch(max_size_in_bytes=40_000),
    )
    properties = PROPERTIES[3]
    messages = [
        (
            b"x" * (index * 97 % 700),
            {"message_id": f"m-{index}", "group_id": f"s-{index % 3}"},
            3600 if index % 2 else None,
        )
        for index in range(200)
    ]
    for body, fields, ttl in messages:
        if not append_message(
            ours, encoded(body, properties, fields, ttl), fields["message_id"], fields["group_id"]
        ):
            break
    with pytest.raises(MessageSizeExceededError):
        for body, fields, ttl in messages:
            theirs.add_message(service_bus_message(body, properties, fields, ttl))

    assert 0 < len(ours) == len(theirs) < len(messages)
    assert ours._size == theirs._size
    assert batch_encoding(ours) == batch_encoding(theirs)


def batch_encoding(batch: ServiceBusMessageBatch) -> bytes:
    """The batch message as the sender sends it: the envelope, then each message as a data section."""
    out = bytearray()
    encode_payload(out, BatchMessage(*batch._message))
    return bytes(out)
