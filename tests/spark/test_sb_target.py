"""Event Hubs → Service Bus queue (stream to queue): MessageId from the source identity, SessionId
from the partition key, provenance as application properties, per-session order."""

from __future__ import annotations

from typing import Any

import pytest
from azure.servicebus import ServiceBusClient
from spark_helpers import eh_endpoint, run_task, send, task_config

pytestmark = pytest.mark.slow

CONFIG = {
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "orders", "partitionCount": 2}],
            "queues": [{"name": "orders-q", "requiresSession": True, "requiresDuplicateDetection": True}],
        }
    ]
}


def receive_session(cs: str, session: str, count: int) -> list[Any]:
    with (
        ServiceBusClient.from_connection_string(cs) as client,
        client.get_queue_receiver("orders-q", session_id=session, max_wait_time=5) as receiver,
    ):
        messages: list[Any] = []
        while len(messages) < count:
            batch = receiver.receive_messages(max_message_count=count, max_wait_time=5)
            if not batch:
                break
            for message in batch:
                receiver.complete_message(message)
            messages.extend(batch)
        return messages


def test_events_become_session_messages_identified_by_their_source_position(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(CONFIG)
    cs = emulator.connection_string("ns1")
    send(cs, "orders", [{"body": f"{key}-{i}", "key": key} for i in range(4) for key in ("alice", "bob")])
    spec = {
        "source": eh_endpoint("ns1", "orders"),
        "targets": [
            {
                "name": "queue",
                "serviceBus": {"connection": {"emulator": {"namespace": "ns1"}}, "queueName": "orders-q"},
            }
        ],
    }

    run_task(spark, task_config(tmp_path, emulator, spec))

    for key in ("alice", "bob"):
        messages = receive_session(cs, key, 4)
        assert [str(m) for m in messages] == [f"{key}-{i}" for i in range(4)]
        assert all(m.session_id == key for m in messages)
        for message in messages:
            sequence = message.application_properties[b"repl-sequence"].decode()
            assert message.message_id.endswith(f"/orders/{message.message_id.split('/')[-2]}/{sequence}")
            assert message.message_id.startswith("localhost:")
