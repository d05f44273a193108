"""The `servicebus` stream reader: queues, subscriptions and dead-letter sub-queues replicated through
the spool, messages completed at the source only after every target accepted them, and nothing lost
or doubled when the driver is killed."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from spark_helpers import eh_endpoint, prop, read_all, run_task, start_app, task_config

from federator_contract.emulatorconfig import EventHubConfig

pytestmark = pytest.mark.slow

LOCK_SECONDS = 5  # short, so redeliveries after a crash or a failure come quickly


def sb_endpoint(namespace: str = "ns1", **entity: Any) -> dict[str, Any]:
    return {"serviceBus": {"connection": {"emulator": {"namespace": namespace}}, **entity}}


def send_messages(cs: str, entity: str, messages: list[ServiceBusMessage]) -> None:
    with ServiceBusClient.from_connection_string(cs) as client, client.get_queue_sender(entity) as sender:
        sender.send_messages(messages)


def receive_all(cs: str, queue: str, **receiver_options: Any) -> list[Any]:
    """Every message of a queue (completed), in arrival order."""
    messages: list[Any] = []
    with (
        ServiceBusClient.from_connection_string(cs) as client,
        client.get_queue_receiver(queue, **receiver_options) as receiver,
    ):
        while batch := receiver.receive_messages(max_message_count=200, max_wait_time=2):
            for message in batch:
                receiver.complete_message(message)
            messages.extend(batch)
    return messages


def stored(emulator: Any, path: str) -> dict[int, int]:
    """Sequence number → delivery count of every message an entity (``queue``,
    ``topic/Subscriptions/sub``, either with ``/$DeadLetterQueue``) still holds, locked or not."""

    def read() -> dict[int, int]:
        state = emulator.state("ns1")
        parts = path.split("/")
        entity = (
            state.queue(parts[0]) if len(parts) in (1, 2) else state.topic(parts[0]).subscription(parts[2])
        )
        if parts[-1] == "$DeadLetterQueue":
            entity = entity.dead_letter
        return {seq: m.delivery_count for seq, m in entity.messages.items()}

    result: dict[int, int] = emulator.call(read)
    return result


def sb_prop(message: Any, name: str) -> str | None:
    value = (message.application_properties or {}).get(name.encode())
    return value.decode() if isinstance(value, bytes) else value


def host(cs: str) -> str:
    return cs.split("sb://")[1].split(";")[0].rstrip("/")


# ------------------------------------------------------------------------------------------- queues


def test_queue_messages_reach_the_target_with_their_properties_and_leave_the_source(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(
        {
            "namespaces": [
                {
                    "name": "ns1",
                    "queues": [
                        {"name": "src", "lockDurationSeconds": LOCK_SECONDS},
                        {"name": "dst", "requiresDuplicateDetection": True},
                    ],
                }
            ]
        }
    )
    cs = emulator.connection_string("ns1")
    send_messages(
        cs,
        "src",
        [
            ServiceBusMessage(
                f"m{i}",
                application_properties={"n": i, "ratio": i / 4, "even": i % 2 == 0, "tag": f"t{i}"},
                content_type="text/plain",
                correlation_id=f"c{i}",
                subject="orders",
                message_id=f"app-{i}",
                time_to_live=timedelta(minutes=10),
            )
            for i in range(25)
        ],
    )
    spec = {
        "source": sb_endpoint(queueName="src", maxMessagesPerBatch=10),
        "targets": [{"name": "dst", **sb_endpoint(queueName="dst")}],
    }
    raw = task_config(tmp_path, emulator, spec)

    query = run_task(spark, raw)
    again = run_task(spark, raw)  # nothing new: nothing sent twice

    messages = receive_all(cs, "dst")
    assert [str(m) for m in messages] == [f"m{i}" for i in range(25)]
    assert [  # each value of its own AMQP type, as sent
        (sb_prop(m, "n"), sb_prop(m, "ratio"), sb_prop(m, "even"), sb_prop(m, "tag")) for m in messages
    ] == [(i, i / 4, i % 2 == 0, f"t{i}") for i in range(25)]
    assert {(m.content_type, m.subject) for m in messages} == {("text/plain", "orders")}
    assert [m.correlation_id for m in messages] == [f"c{i}" for i in range(25)]
    assert [m.message_id for m in messages] == [f"app-{i}" for i in range(25)]  # consumers dedupe by it
    assert {m.time_to_live for m in messages} == {timedelta(minutes=10)}
    source_ids = [sb_prop(m, "repl-source-id") for m in messages]
    assert source_ids == [f"{host(cs)}/src/0/{seq}" for seq in range(1, 26)]
    # Three batches of at most 10 messages (maxMessagesPerBatch), a spool file each: Spark counts the files
    # (the write task reads them, sources/servicebus_slices.py).
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [1, 1, 1]
    assert [p["numInputRows"] for p in again.recentProgress if p["numInputRows"]] == []
    assert stored(emulator, "src") == {}
    assert (
        list(
            (Path(raw["checkpointLocation"].removeprefix("file://")) / "federator/servicebus").glob("*.jsonl")
        )
        == []
    )


# -------------------------------------------------------------------------------- subscriptions, DLQ


def test_a_subscription_replicated_to_an_event_hub_keeps_each_key_together_and_in_order(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(
        {
            "namespaces": [
                {
                    "name": "ns1",
                    "topics": [
                        {
                            "name": "orders",
                            "subscriptions": [{"name": "repl", "lockDurationSeconds": LOCK_SECONDS}],
                        }
                    ],
                    "eventHubs": [{"name": "hub", "partitionCount": 2}],
                }
            ]
        }
    )
    cs = emulator.connection_string("ns1")
    keys = ("alice", "bob", "carol")
    with ServiceBusClient.from_connection_string(cs) as client, client.get_topic_sender("orders") as sender:
        sender.send_messages(
            [ServiceBusMessage(f"{key}-{i}", partition_key=key) for i in range(8) for key in keys]
        )
    spec = {
        "source": sb_endpoint(topicName="orders", subscriptionName="repl", maxMessagesPerBatch=7),
        "targets": [{"name": "hub", **eh_endpoint("ns1", "hub")}],
    }

    run_task(spark, task_config(tmp_path, emulator, spec))

    partitions_of: dict[str, set[str]] = {key: set() for key in keys}
    bodies_of: dict[str, list[str]] = {key: [] for key in keys}
    for partition, events in read_all(cs, "hub").items():
        for event in events:
            key = event.partition_key.decode()
            partitions_of[key].add(partition)
            bodies_of[key].append(event.body_as_str())
    assert bodies_of == {key: [f"{key}-{i}" for i in range(8)] for key in keys}
    assert all(len(partitions) == 1 for partitions in partitions_of.values())
    assert prop(read_all(cs, "hub")[next(iter(partitions_of["bob"]))][0], "repl-source-id").startswith(
        f"{host(cs)}/orders/Subscriptions/repl/0/"
    )
    assert stored(emulator, "orders/Subscriptions/repl") == {}


def test_a_dead_letter_sub_queue_is_replicated_with_its_dead_letter_reason_and_emptied(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(
        {"namespaces": [{"name": "ns1", "queues": [{"name": "work"}, {"name": "spilled"}]}]}
    )
    cs = emulator.connection_string("ns1")
    send_messages(cs, "work", [ServiceBusMessage(f"m{i}") for i in range(6)])
    with ServiceBusClient.from_connection_string(cs) as client, client.get_queue_receiver("work") as receiver:
        for message in receiver.receive_messages(max_message_count=6, max_wait_time=5):
            receiver.dead_letter_message(message, reason="poison", error_description="cannot parse")
    spec = {
        "source": sb_endpoint(queueName="work", subQueue="deadLetter"),
        "targets": [{"name": "spilled", **sb_endpoint(queueName="spilled")}],
    }

    run_task(spark, task_config(tmp_path, emulator, spec))

    messages = receive_all(cs, "spilled")
    assert sorted(str(m) for m in messages) == [f"m{i}" for i in range(6)]
    assert {sb_prop(m, "DeadLetterReason") for m in messages} == {"poison"}
    assert all(
        sb_prop(m, "repl-source-id").startswith(f"{host(cs)}/work/$DeadLetterQueue/0/") for m in messages
    )
    assert stored(emulator, "work/$DeadLetterQueue") == {}
    assert stored(emulator, "work") == {}


# ----------------------------------------------------------------------------------------- failures


def run_failing(spark: Any, raw: dict[str, Any]) -> str:
    """Run the task (availableNow) expecting it to fail; returns the failure."""
    from pyspark.errors import StreamingQueryException

    from federator_contract.taskconfig import TaskConfig
    from federator_spark import pipeline

    task = pipeline.plan_task(TaskConfig.from_raw(json.loads(json.dumps(raw))))
    query = pipeline.start(spark, task, available_now=True)
    try:
        query.awaitTermination(timeout=120)
    except StreamingQueryException as failure:
        return str(failure)
    query.stop()
    raise AssertionError("the task should have failed")


def eventually(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.2)


def test_messages_stay_in_the_source_until_the_target_accepts_them(spark, emulator_factory, tmp_path):
    emulator = emulator_factory(
        {"namespaces": [{"name": "ns1", "queues": [{"name": "src", "lockDurationSeconds": LOCK_SECONDS}]}]}
    )
    cs = emulator.connection_string("ns1")
    send_messages(cs, "src", [ServiceBusMessage(f"m{i}") for i in range(8)])
    spec = {
        "source": sb_endpoint(queueName="src"),
        "targets": [{"name": "hub", **eh_endpoint("ns1", "hub")}],  # the event hub does not exist yet
    }
    raw = task_config(tmp_path, emulator, spec)

    assert "/hub' could not be found" in run_failing(spark, raw)
    # Nothing completed, and no lock lapsed although the failing send took longer (the client's own
    # retries) than two lock durations: the locks were renewed.
    assert stored(emulator, "src") == dict.fromkeys(range(1, 9), 0)

    # The failed batch is replayed from the spool, and fails again; its messages are still at the
    # source, delivered once more (the earlier run let go of them when this one took over).
    run_failing(spark, raw)
    eventually(lambda: set(stored(emulator, "src").values()) == {1})
    assert sorted(stored(emulator, "src")) == list(range(1, 9))

    emulator.call(
        lambda: emulator.state("ns1").create_event_hub(EventHubConfig.model_validate({"name": "hub"}))
    )
    run_task(spark, raw)

    delivered = Counter(e.body_as_str() for events in read_all(cs, "hub").values() for e in events)
    assert delivered == Counter(f"m{i}" for i in range(8))
    assert stored(emulator, "src") == {}
    assert stored(emulator, "src/$DeadLetterQueue") == {}


CRASH_MESSAGES = 120
CRASH_BATCH = 20


@pytest.mark.jvm
def test_a_killed_driver_loses_nothing_and_a_duplicate_detecting_target_holds_each_message_once(
    emulator_factory, tmp_path
):
    emulator = emulator_factory(
        {
            "namespaces": [
                {
                    "name": "ns1",
                    "queues": [
                        {"name": "src", "lockDurationSeconds": LOCK_SECONDS},
                        {"name": "dst", "requiresDuplicateDetection": True},
                        {"name": "raw"},  # no duplicate detection: shows what was sent twice
                    ],
                }
            ]
        }
    )
    cs = emulator.connection_string("ns1")
    send_messages(cs, "src", [ServiceBusMessage(f"m{i}") for i in range(CRASH_MESSAGES)])
    spec = {
        "source": sb_endpoint(queueName="src", maxMessagesPerBatch=CRASH_BATCH),
        "targets": [
            {"name": "dst", **sb_endpoint(queueName="dst")},
            {"name": "raw", **sb_endpoint(queueName="raw")},
        ],
        "runtime": {"triggerIntervalSeconds": 0},
    }
    config_path = tmp_path / "task.json"
    config_path.write_text(json.dumps(task_config(tmp_path, emulator, spec)))
    log = tmp_path / "replicate.log"

    def written() -> int:
        return len(stored(emulator, "dst"))

    app = start_app(config_path, log)
    try:
        eventually(lambda: app.poll() is None and written() >= CRASH_MESSAGES // 4, timeout=180)
    finally:
        os.killpg(app.pid, signal.SIGKILL)  # the driver, its JVM, the source runner: everything
        app.wait()
    assert written() < CRASH_MESSAGES, "the crash came after the end of the stream"

    restarted = start_app(config_path, log)
    try:
        eventually(lambda: stored(emulator, "src") == {} and written() == CRASH_MESSAGES, timeout=180)
    finally:
        os.killpg(restarted.pid, signal.SIGKILL)
        restarted.wait()

    copies = Counter(str(m) for m in receive_all(cs, "dst"))
    sent = Counter(str(m) for m in receive_all(cs, "raw"))
    assert set(copies) == {f"m{i}" for i in range(CRASH_MESSAGES)}  # nothing lost
    assert [body for body, count in copies.items() if count > 1] == []  # nothing twice
    assert set(sent) == set(copies)
    assert sum(count - 1 for count in sent.values()) <= CRASH_BATCH  # only the batch in flight, again
    assert stored(emulator, "src/$DeadLetterQueue") == {}
