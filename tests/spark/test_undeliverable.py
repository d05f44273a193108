"""An event over a target's message size limit can never be sent there: it goes to the dead-letter
endpoint with the target and the limit as its reason, and the stream goes on (a failed batch would
fail again on every replay and stop the task for good)."""

from __future__ import annotations

import json

import pytest
from azure.servicebus import ServiceBusClient
from spark_helpers import body, eh_endpoint, prop, read_all, run_task, send, task_config

pytestmark = pytest.mark.slow

LIMIT = 256 * 1024  # Event Hubs Basic, Service Bus Standard
CONFIG = {
    "namespaces": [
        {
            "name": "standard",  # 1 MB: holds the large event
            "eventHubs": [{"name": "orders", "partitionCount": 1}, {"name": "dead", "partitionCount": 1}],
        },
        {
            "name": "basic",
            "maxMessageSizeBytes": LIMIT,
            "eventHubs": [{"name": "orders", "partitionCount": 1}],
            "queues": [{"name": "orders-q"}],
        },
    ]
}
LARGE = "L" * 300_000


def test_an_event_over_a_targets_limit_is_dead_lettered_and_the_rest_replicated_in_order(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(CONFIG)
    standard, basic = emulator.connection_string("standard"), emulator.connection_string("basic")
    send(standard, "orders", [{"body": text, "partition": "0"} for text in ("e0", "e1", LARGE, "e3")])
    spec = {
        "source": eh_endpoint("standard", "orders"),
        "targets": [
            {"name": "hub", **eh_endpoint("basic", "orders")},
            {
                "name": "queue",
                "serviceBus": {"connection": {"emulator": {"namespace": "basic"}}, "queueName": "orders-q"},
            },
        ],
        "deadLetter": eh_endpoint("standard", "dead"),
    }
    raw = task_config(tmp_path, emulator, spec, namespaces=("standard", "basic"))

    run_task(spark, raw)

    assert [body(e) for e in read_all(basic, "orders")["0"]] == ["e0", "e1", "e3"]
    with (
        ServiceBusClient.from_connection_string(basic) as client,
        client.get_queue_receiver("orders-q", max_wait_time=5) as receiver,
    ):
        assert [str(m) for m in receiver.receive_messages(max_message_count=10, max_wait_time=5)] == [
            "e0",
            "e1",
            "e3",
        ]
    dead = read_all(standard, "dead")["0"]
    assert [body(e) for e in dead] == [LARGE, LARGE]  # refused by each target once
    reasons = [prop(e, "repl-dead-letter-reason") for e in dead]
    assert reasons[0].startswith("target:hub: an event of ")
    assert reasons[0].endswith(f"exceeds the message size limit of event hub orders ({LIMIT} bytes)")
    assert reasons[1] == (
        f"target:queue: a message with a body of {len(LARGE)} bytes exceeds the message size limit "
        f"of orders-q ({LIMIT} bytes)"
    )
    assert all(prop(e, "repl-sequence") == "2" for e in dead)
    status = json.loads((tmp_path / "status-task.json").read_text())
    assert status["targets"]["hub"] == {"eventsOut": 3, "deadLettered": 0}
    assert status["targets"]["queue"] == {"eventsOut": 3, "deadLettered": 0}
    assert status["targets"]["deadLetter"]["deadLettered"] == 2
    assert status["eventsDropped"]["undeliverable"] == 0
