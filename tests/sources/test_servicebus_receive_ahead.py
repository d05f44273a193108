"""The Service Bus source receives a batch's successor while Spark writes the batch (real emulator, the
driver-side state without Spark: each ``latest`` call is what Spark's ``latestOffset`` would make, and
Spark's commit of a batch is written as Spark writes it)."""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient
from azure.servicebus.exceptions import MessageLockLostError

from federator_spark.sources import servicebus_driver
from federator_spark.sources.servicebus_driver import SourceDriver
from federator_spark.sources.spool import Spool, read_spool_file
from support.polling import eventually


def spark_committed(checkpoint: Path, batch_id: int, spool_end: int) -> None:
    """Spark's offset and commit log entries for a batch it wrote (format of pyspark 4.3)."""
    for log in ("offsets", "commits"):
        (checkpoint / log).mkdir(parents=True, exist_ok=True)
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (checkpoint / "offsets" / str(batch_id)).write_text(
        f"v1\n{json.dumps(metadata)}\n{json.dumps({'spool': spool_end})}"
    )
    (checkpoint / "commits" / str(batch_id)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def first_batch(driver: SourceDriver) -> None:
    """Spark asks for its first batch until there is one (the source opens a new receiver's link with a
    budget of its own: ``test_servicebus_link_opening.py``)."""
    eventually(lambda: driver.latest(0, 10) == 1, timeout=60)


def received_ahead(driver: SourceDriver, count: int) -> None:
    """Wait until the source has received ``count`` messages for the next batch, as it does while Spark
    writes the current one (each message's record is made as it arrives, kept until spooled)."""
    eventually(lambda: len(driver.records) == count, timeout=20, message=f"{count} not received ahead")


def held_ahead(driver: SourceDriver, count: int) -> None:
    """Wait until the receive ahead has handed over ``count`` messages for the next batch (it does once it
    has a batch's worth, or when Spark asks)."""
    eventually(lambda: len(driver.ahead or {}) == count, timeout=20, message=f"{count} not held ahead")


def spooled(driver: SourceDriver, number: int) -> list[int]:
    _, records = read_spool_file(Spool(driver.settings.spool_dir).path(number))
    return [int(base64.b64decode(str(r["body"]))) for r in records]


def available_now(
    driver: SourceDriver, writing_seconds: float = 0.0, written: Callable[[], bool] = lambda: True
) -> list[list[int]]:
    """The batches an ``availableNow`` run makes of at most 10 messages, each committed
    ``writing_seconds`` after it was spooled and once ``written`` holds (Spark writing it; the source
    receives ahead meanwhile)."""
    driver.prepare_available_now()
    batches: list[list[int]] = []
    for batch_id in range(25):
        end = driver.latest(batch_id, 10)
        if end == batch_id:
            return batches
        batches.append(spooled(driver, end))
        time.sleep(writing_seconds)
        eventually(written, timeout=20, message="Spark's writing waited in vain")
        spark_committed(driver.settings.checkpoint, batch_id, end)
    raise AssertionError("the run did not end")


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

    first_batch(driver)
    # A batch takes what the first receive found (on a loaded machine fewer than ten), in order.
    last = spooled(driver, 1)[-1]
    assert spooled(driver, 1) == list(range(1, last + 1))
    held_ahead(driver, 10)

    # Received ahead means locked by us: another consumer gets only what lies beyond.
    assert competing_receive(emulator_connection_string) == list(range(last + 11, 31))

    spark_committed(driver.settings.checkpoint, 0, 1)
    assert driver.latest(1, 10) == 2
    assert spooled(driver, 2) == list(range(last + 1, last + 11))


def test_what_arrives_while_a_batch_is_written_is_the_next_batch_and_an_idle_source_ends_the_receive(
    driver: SourceDriver, send: Callable[[range], None], emulator_connection_string: str
) -> None:
    send(range(1, 4))
    first_batch(driver)
    last = spooled(driver, 1)[-1]  # a cold receiver's first receive may end before all three arrived

    send(range(4, 9))  # while Spark writes batch 1
    received_ahead(driver, 8 - last)
    spark_committed(driver.settings.checkpoint, 0, 1)
    assert driver.latest(1, 10) == 2
    assert spooled(driver, 2) == list(range(last + 1, 9))

    spark_committed(driver.settings.checkpoint, 1, 2)
    assert driver.latest(2, 10) == 2  # nothing arrived: no batch
    assert driver.latest(2, 10) == 2
    # Both batches were completed at the source once committed.
    assert competing_receive(emulator_connection_string) == []


def test_available_now_ends_with_what_was_there_when_it_started(
    driver: SourceDriver, send: Callable[[range], None]
) -> None:
    send(range(1, 26))

    batches = available_now(driver)

    assert [n for batch in batches for n in batch] == list(range(1, 26))
    assert all(len(batch) <= 10 for batch in batches)
    assert driver.latest(len(batches), 10) == len(batches)  # and it stays ended


@pytest.mark.parametrize(("budget", "per_batch"), [(10, 2), (1, 1)], ids=["two bodies fit", "none fits"])
def test_a_batch_holds_no_more_message_bytes_than_the_budget_whatever_its_message_limit(
    driver: SourceDriver,
    send: Callable[[range], None],
    monkeypatch: pytest.MonkeyPatch,
    budget: int,
    per_batch: int,
) -> None:
    monkeypatch.setattr(servicebus_driver, "BATCH_BYTES", budget)
    send(range(1, 8))  # each body spools as 4 bytes of base64

    batches = available_now(driver, writing_seconds=0.2)  # receiving ahead meanwhile, as under a backlog

    assert batches == [list(range(n, min(n + per_batch, 8))) for n in range(1, 8, per_batch)]


def test_available_now_is_not_ended_by_a_short_gather_that_found_nothing(
    driver: SourceDriver, send: Callable[[range], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    send(range(1, 26))
    receiver = driver.receiver()
    receive_messages: Callable[..., list[Any]] = receiver.receive_messages
    slow_once = [True]

    def slow_broker(max_message_count: int, max_wait_time: float) -> list[Any]:
        """Four messages a call; the first short gather ends before the broker delivers anything."""
        if max_wait_time < driver.settings.wait_seconds and slow_once:
            slow_once.clear()
            return []
        return receive_messages(max_message_count=min(4, max_message_count), max_wait_time=max_wait_time)

    monkeypatch.setattr(receiver, "receive_messages", slow_broker)

    # Spark writes the first batch until the receive ahead's short gather has come back empty (on a loaded
    # machine it may not get that far in a fixed time), then each for long enough to receive four ahead.
    batches = available_now(driver, writing_seconds=0.3, written=lambda: not slow_once)

    assert sorted(n for batch in batches for n in batch) == list(range(1, 26))


def test_messages_arriving_between_receive_calls_stay_locked_for_the_next_batch(
    driver: SourceDriver, send: Callable[[range], None], emulator_connection_string: str
) -> None:
    send(range(1, 4))
    first_batch(driver)
    driver._stop_receiving_ahead()  # no receive call runs now; the last one left credit for 10
    send(range(4, 9))
    time.sleep(0.5)  # they reach our connection on that credit

    spark_committed(driver.settings.checkpoint, 0, 1)
    driver.settle()  # a management request (completing batch 1) reads them while it waits

    assert competing_receive(emulator_connection_string) == []  # not released: still ours
    assert driver.latest(1, 10) == 2
    assert spooled(driver, 2) == list(range(4, 9))


def test_messages_kept_from_between_receive_calls_do_not_wait_out_the_next_poll(
    driver: SourceDriver, send: Callable[[range], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK gathers briefly after a message that arrives during a call; one it kept from before the
    # call made the call wait its whole receiveWaitSeconds (the last messages of a burst waited ~1 s).
    send(range(1, 4))
    first_batch(driver)
    driver._stop_receiving_ahead()
    send(range(4, 9))
    time.sleep(0.5)
    spark_committed(driver.settings.checkpoint, 0, 1)
    driver.settle()  # reads them while it waits for its reply: the SDK keeps them
    driver.settings = dataclasses.replace(driver.settings, wait_seconds=30.0)
    receiver, waits = driver.receiver(), list[float]()
    receive = receiver.receive_messages

    def recorded(**asked: Any) -> Any:
        waits.append(asked["max_wait_time"])
        return receive(**asked)

    monkeypatch.setattr(receiver, "receive_messages", recorded)
    received = driver._receive(10)

    assert sorted(int(str(m)) for m in received) == list(range(4, 9))
    assert waits and max(waits) < 30, f"a receive call waited for its whole 30 s poll: {waits}"


def test_a_message_received_ahead_whose_lock_is_lost_leaves_nothing_behind(
    driver: SourceDriver, send: Callable[[range], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    send(range(1, 21))
    first_batch(driver)
    held_ahead(driver, 10)
    driver._stop_receiving_ahead()

    def lock_lost(message: Any) -> None:
        raise MessageLockLostError(message="lost")

    monkeypatch.setattr(driver.receiver(), "renew_message_lock", lock_lost)
    with driver.lock:
        driver.lock_span = 1e9  # every lock is due for renewal
        driver._renew()

    assert driver.ahead == {} and driver.held == {}
    assert driver.records == {}  # what it would have spooled is not kept for a message that may not return


def test_the_settler_leaves_the_settling_to_spark_while_spark_waits_for_a_batch(
    driver: SourceDriver, send: Callable[[range], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    send(range(1, 21))
    first_batch(driver)
    # A cold receiver's first receive may end with fewer than ten on a loaded machine: the batch received
    # ahead is the ten after it.
    last = spooled(driver, 1)[-1]
    held_ahead(driver, 10)  # locked: the settler runs
    spark_committed(driver.settings.checkpoint, 0, 1)
    settled_by: list[str] = []
    settle, stop_receiving_ahead = driver.settle, driver._stop_receiving_ahead
    receive_in_progress = threading.Event()

    def recorded_settle() -> int:
        settled_by.append(threading.current_thread().name)
        return settle()

    def stop_receiving_ahead_slowly() -> None:
        """Spark asks while a receive call is still in progress, for as long as two settler ticks."""
        stop_receiving_ahead()
        settled_by.append("(spark asks)")
        receive_in_progress.wait(10)

    monkeypatch.setattr(driver, "settle", recorded_settle)
    monkeypatch.setattr(driver, "_stop_receiving_ahead", stop_receiving_ahead_slowly)
    asking = threading.Thread(target=driver.latest, args=(1, 10), name="spark")
    asking.start()
    time.sleep(2.5)
    receive_in_progress.set()
    asking.join(10)

    # The settler did not take the lock the batch was about to take: the first settling was Spark's.
    assert settled_by[settled_by.index("(spark asks)") + 1] == "spark"
    assert spooled(driver, 2) == list(range(last + 1, last + 11))
    # It goes on once Spark was served, at its first tick after the receive ahead of batch 3 (which holds
    # the lock until a batch's worth arrived or a quarter of the lock span passed: 15 s here).
    receiving_ahead = (driver.lock_span or 60.0) / 4
    eventually(lambda: settled_by[-1] == "servicebus-settler", timeout=receiving_ahead + 15)
