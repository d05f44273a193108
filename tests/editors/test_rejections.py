"""The writer around the chain, without Spark (a write task called directly, publishing to an
emulator queue): a poison event or a rejection never stops the task; without a dead-letter endpoint
the event is dropped, counted and logged by reason (never by body); routing reads the edited event."""

from __future__ import annotations

import json
import logging

import pytest
from azure.servicebus import ServiceBusClient

from federator_contract.taskconfig import TaskConfig
from federator_spark.planning import plan_from_task
from federator_spark.sinks.replication import ReplicationWriter
from support.connections import connection_files
from support.rows import event_row

pytestmark = pytest.mark.slow  # an emulator, a few seconds

DEEP = "[" * 5000 + "]" * 5000  # json.loads raises RecursionError: an exception no editor expects


def test_poison_and_rejected_events_are_dropped_counted_and_logged_without_their_body(
    emulator_factory, tmp_path, caplog
):
    emulator = emulator_factory({"namespaces": [{"name": "ns1", "queues": [{"name": "out"}]}]})
    cs = emulator.connection_string("ns1")
    connection = {"emulator": {"namespace": "ns1"}}
    spec = {
        "source": {"eventHub": {"connection": connection, "eventHubName": "src"}},
        "editors": [
            {"transform": {"rename": {"size": "kind"}}},
            {"enrich": {"properties": {"stage": "edited"}}},
        ],
        # Both conditions read what the editors made.
        "targets": [
            {
                "name": "out",
                "serviceBus": {"connection": connection, "queueName": "out"},
                "condition": "body.kind = 'big' AND stage = 'edited'",
            }
        ],
    }
    raw = {
        "kind": "ReplicationTask",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": spec,
        "checkpointLocation": str(tmp_path / "checkpoint"),
        "emulatorConnectionFiles": connection_files(tmp_path / "connections", emulator, ["ns1"]),
    }
    writer = ReplicationWriter(plan_from_task(TaskConfig.from_raw(raw)))
    rows = [
        event_row(0, json.dumps({"size": "big", "n": 0})),
        event_row(1, DEEP),
        event_row(2, "secret-looking-body-not-json"),
        event_row(3, json.dumps({"size": "small", "n": 3})),
        event_row(4, json.dumps({"size": "big", "n": 4})),
    ]

    with caplog.at_level(logging.WARNING, logger="federator_spark.sinks.replication"):
        (report,) = writer.write(iter(rows)).reports  # rows of events: one source partition

    assert (report.events_in, report.rejected_dropped, report.unrouted_dropped) == (5, 2, 1)
    assert report.out == {"out": 2} and report.dead_lettered == {}
    with ServiceBusClient.from_connection_string(cs) as client, client.get_queue_receiver("out") as receiver:
        received = receiver.receive_messages(max_message_count=10, max_wait_time=5)
    assert [json.loads(str(m))["n"] for m in received] == [0, 4]
    assert received[0].application_properties[b"stage"] == b"edited"
    logged = [r.getMessage() for r in caplog.records if r.name == "federator_spark.sinks.replication"]
    assert logged == [
        "event host/src/0/1 dropped (no deadLetter endpoint): "
        "0:transform: RecursionError: maximum recursion depth exceeded "
        "while decoding a JSON array from a unicode string",
        "event host/src/0/2 dropped (no deadLetter endpoint): "
        "0:transform: body is not JSON: Expecting value: line 1 column 1 (char 0)",
    ]
    assert not any("secret-looking" in line or "[[[" in line for line in logged)
