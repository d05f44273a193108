"""What a received Service Bus message becomes: the spool record (real messages from the emulator,
received with the SDK) and then the row every sink, condition and editor reads."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from federator_spark.sources.servicebus_records import to_record, to_row


def received(cs: str, *messages: ServiceBusMessage) -> list[Any]:
    with ServiceBusClient.from_connection_string(cs) as client:
        with client.get_queue_sender("q1") as sender:
            sender.send_messages(list(messages))
        with client.get_queue_receiver("q1") as receiver:
            found = receiver.receive_messages(max_message_count=len(messages), max_wait_time=5)
            for message in found:
                receiver.complete_message(message)
            return found


def test_a_message_keeps_its_body_properties_system_properties_and_position(emulator_connection_string):
    (message,) = received(
        emulator_connection_string,
        ServiceBusMessage(
            b'{"order": 7}',
            application_properties={"n": 1, "urgent": True, "region": "eu"},
            message_id="order-7",
            content_type="application/json",
            correlation_id="c-7",
            subject="created",
            to="billing",
            reply_to="replies",
            partition_key="customer-3",
            time_to_live=timedelta(seconds=90),
        ),
    )

    record = json.loads(json.dumps(to_record(message)))  # what the spool file holds
    row = to_row(record, "localhost:5672/q1")

    body, source, partition, partition_count, sequence, offset, enqueued, key, properties, system, types = row
    assert (body, source, partition, partition_count) == (b'{"order": 7}', "localhost:5672/q1", "0", 1)
    assert (sequence, offset) == (message.sequence_number, str(message.sequence_number))
    assert abs((enqueued - message.enqueued_time_utc).total_seconds()) < 0.001
    assert key == "customer-3"
    assert properties == {"n": "1", "urgent": "true", "region": "eu"}
    assert types == {"n": "int", "urgent": "bool"}  # so that sinks send them back as they came
    assert system == {
        "message_id": "order-7",
        "content_type": "application/json",
        "correlation_id": "c-7",
        "subject": "created",
        "to": "billing",
        "reply_to": "replies",
        "time_to_live": "90",
        "source_kind": "serviceBus",  # so a Service Bus target keeps the MessageId
    }


def test_the_session_is_the_partition_key_and_absent_system_properties_stay_absent(
    emulator_connection_string,
):
    (message,) = received(emulator_connection_string, ServiceBusMessage("plain", session_id="s-1"))

    record = to_record(message)

    assert record["partition_key"] == "s-1"
    # The SDK stamps a MessageId on send.
    assert list(record["system_properties"]) == ["message_id", "source_kind"]
    assert to_row(record, "h/q1")[0] == b"plain"
