"""The Service Bus source receives a batch's successor while Spark writes the batch (real emulator, the
driver-side state without Spark: each ``latest`` call is what Spark's ``latestOffset`` would make, and
Spark's commit of a batch is written as Spark writes it)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from federator_spark.connections import Connection
from federator_spark.sources.servicebus import SourceDriver
from federator_spark.sources.servicebus_settings import SourceSettings
from federator_spark.sources.spool import Spool, read_spool_file


def spark_committed(checkpoint: Path, batch_id: int, spool_end: int) -> None:
    """Spark's offset and commit log entries for a batch it wrote (format of pyspark 4.3)."""
    for log in ("offsets", "commits"):
        (checkpoint / log).mkdir(parents=True, exist_ok=True)
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (checkpoint / "offsets" / str(batch_id)).write_text(
        f"v1\n{json.dumps(metadata)}\n{json.dumps({'spool': spool_end})}"
    )
    (checkpoint / "commits" / str(batch_id)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def send(emulator_connection_string: str) -> Callable[[range], None]:
    def send(numbers: range) -> None:
        client = ServiceBusClient.from_connection_string(emulator_connection_string)
        with client, client.get_queue_sender("q1") as sender:
            sender.send_messages([ServiceBusMessage(str(n)) for n in numbers])

    return send


@pytest.fixture
def driver(emulator_connection_string: str, tmp_path: Path) -> Iterator[SourceDriver]:
    options = {
        "connection": Connection(connection_string=emulator_connection_string).to_option(),
        "queueName": "q1",
        "maxMessagesPerBatch": "10",
        "receiveWaitSeconds": "0.5",
        "checkpointLocation": str(tmp_path / "checkpoint"),
    }
    driver = SourceDriver(SourceSettings.from_options(options))
    yield driver
    driver._stop_receiving_ahead()
    driver._reset_receiver()


def spooled(driver: SourceDriver, number: int) -> list[int]:
    _, records = read_spool_file(Spool(driver.settings.spool_dir).path(number))
    return [int(base64.b64decode(str(r["body"]))) for r in records]


def competing_receive(cs: str) -> list[int]:
    """What another consumer of the queue gets, completed."""
    with ServiceBusClient.from_connection_string(cs) as client, client.get_queue_receiver("q1") as receiver:
        messages = receiver.receive_messages(max_message_count=100, max_wait_time=2)
        for message in messages:
            receiver.complete_message(message)
        return sorted(int(str(m)) for m in messages)


def test_the_next_batch_is_locked_for_us_while_spark_writes_the_current_one(
    driver: SourceDriver, send: Callable[[range], None], emulator_connection_string: str
) -> None:
    send(range(1, 31))

    assert driver.latest(0, 10) == 1
    assert spooled(driver, 1) == list(range(1, 11))
    eventually(lambda: driver.ahead is not None and len(driver.ahead) == 10)

    # Received ahead means locked by us: another consumer gets only what lies beyond.
    assert competing_receive(emulator_connection_string) == list(range(21, 31))

    spark_committed(driver.settings.checkpoint, 0, 1)
    assert driver.latest(1, 10) == 2
    assert spooled(driver, 2) == list(range(11, 21))


def test_what_arrives_while_a_batch_is_written_is_the_next_batch_and_an_idle_source_ends_the_receive(
    driver: SourceDriver, send: Callable[[range], None], emulator_connection_string: str
) -> None:
    send(range(1, 4))
    assert driver.latest(0, 10) == 1

    send(range(4, 9))  # while Spark writes batch 1
    spark_committed(driver.settings.checkpoint, 0, 1)
    assert driver.latest(1, 10) == 2
    assert spooled(driver, 2) == list(range(4, 9))

    spark_committed(driver.settings.checkpoint, 1, 2)
    assert driver.latest(2, 10) == 2  # nothing arrived: no batch
    assert driver.latest(2, 10) == 2
    # Both batches were completed at the source once committed.
    assert competing_receive(emulator_connection_string) == []


def test_available_now_ends_with_what_was_there_when_it_started(
    driver: SourceDriver, send: Callable[[range], None]
) -> None:
    send(range(1, 26))
    driver.prepare_available_now()

    batches: list[list[int]] = []
    for batch_id in range(5):
        end = driver.latest(batch_id, 10)
        if end == batch_id:
            break
        batches.append(spooled(driver, end))
        spark_committed(driver.settings.checkpoint, batch_id, end)

    assert [n for batch in batches for n in batch] == list(range(1, 26))
    assert all(len(batch) <= 10 for batch in batches)
    assert driver.latest(len(batches), 10) == len(batches)  # and it stays ended
