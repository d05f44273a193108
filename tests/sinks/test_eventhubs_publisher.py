"""The Event Hubs publisher sends a batch on its sending thread while the task fills the next one,
with at most one batch in flight: each destination's events reach the broker in order, and a failed
send fails the task's flush."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from azure.eventhub import EventDataBatch

from federator_spark.events import Event
from federator_spark.sinks import eventhubs
from federator_spark.sinks.eventhubs import EventHubPublisher


class Client:
    """Records what each send_batch carried; a send takes a while, like a broker's acknowledgement."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.sent: list[tuple[str | None, int]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def create_batch(self, partition_id: str | None = None, partition_key: str | None = None) -> Any:
        return EventDataBatch(
            max_size_in_bytes=64 * 1024, partition_id=partition_id, partition_key=partition_key
        )

    def send_batch(self, batch: Any) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.01)
        with self.lock:
            self.in_flight -= 1
            if self.fail_on is not None and len(self.sent) == self.fail_on:
                raise ValueError("the broker refused the batch")
            self.sent.append((batch._partition_id, len(batch)))


@pytest.fixture
def publisher(monkeypatch) -> tuple[EventHubPublisher, Client]:
    client = Client()
    producer = SimpleNamespace(client=client, partition_ids=lambda: ["0", "1"], ready=lambda: None)
    monkeypatch.setattr(eventhubs, "prepare", lambda target: producer)
    return EventHubPublisher(SimpleNamespace(name="out", entity="hub")), client


def event(partition: str, n: int) -> Event:
    return Event(
        body=b"%06d" % n + b"x" * 1000,
        source="ns/hub",
        partition=partition,
        partition_count=2,
        sequence_number=n,
        offset=str(n),
        enqueued_time=datetime.now(UTC),
        partition_key=None,
    )


def test_batches_go_out_one_at_a_time_in_the_order_they_were_filled(publisher) -> None:
    publisher, client = publisher
    for n in range(300):
        publisher.add(event("0", n), {})
    for n in range(100):
        publisher.add(event("1", n), {})
    publisher.flush()

    assert client.most_in_flight == 1
    assert sum(count for partition, count in client.sent if partition == "0") == 300
    assert sum(count for partition, count in client.sent if partition == "1") == 100
    assert len(client.sent) > 5  # 1 KB events in 64 KB batches: several batches per partition
    publisher.close()


def test_a_failed_send_fails_the_flush_and_nothing_after_it_is_sent(publisher) -> None:
    publisher, client = publisher
    client.fail_on = 1
    for n in range(300):
        publisher.add(event("0", n), {})
    with pytest.raises(ValueError, match="refused"):
        publisher.flush()
    assert len(client.sent) == 1
    publisher.close()
