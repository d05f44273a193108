"""The demo's traffic generator: keyed events at a steady rate, each with a per-key sequence number and
its send time, so that the target can be checked for loss, duplicates, order and lag."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

from azure.eventhub import EventData, EventHubProducerClient

TICK_SECONDS = 0.1
HIGH_PRIORITY_EVERY = 10
"""Every tenth event of a key is `priority = 'high'` (what the demo's routing target selects)."""


@dataclass(frozen=True)
class SentEvent:
    key: str
    seq: int
    sent_at: float
    priority: str

    @property
    def id(self) -> str:
        return event_id(self.key, self.seq)


def event_id(key: str, seq: int) -> str:
    return f"{key}-{seq:06d}"


class TrafficGenerator(threading.Thread):
    """Sends ``rate`` events per second for ``duration`` seconds (or until ``stop``), one batch per key and
    tick (the partition key keeps each key's events in order in one partition)."""

    def __init__(
        self,
        connection_string: str,
        event_hub: str,
        *,
        rate: float,
        duration: float,
        keys: int = 16,
        stop: threading.Event | None = None,
    ) -> None:
        super().__init__(name="federator-demo-traffic", daemon=True)
        self.connection_string = connection_string
        self.event_hub = event_hub
        self.rate = rate
        self.duration = duration
        self.keys = [f"k{i:02d}" for i in range(keys)]
        self.stop_event = stop or threading.Event()
        self.sent: dict[str, SentEvent] = {}
        self.send_errors = 0
        self.last_error: str | None = None
        self._next_seq = dict.fromkeys(self.keys, 0)

    @property
    def produced(self) -> int:
        return len(self.sent)

    def run(self) -> None:
        producer = EventHubProducerClient.from_connection_string(
            self.connection_string, eventhub_name=self.event_hub
        )
        with producer:
            started = time.monotonic()
            due_total = 0
            while not self.stop_event.is_set():
                elapsed = time.monotonic() - started
                if elapsed >= self.duration:
                    break
                due = int(self.rate * elapsed) - due_total
                due_total += due
                by_key: dict[str, int] = {}
                for n in range(due):
                    key = self.keys[(due_total - due + n) % len(self.keys)]
                    by_key[key] = by_key.get(key, 0) + 1
                for key, count in by_key.items():
                    self._send(producer, key, count)
                self.stop_event.wait(TICK_SECONDS)

    def _send(self, producer: EventHubProducerClient, key: str, count: int) -> None:
        batch = producer.create_batch(partition_key=key)
        events = []
        sent_at = time.time()
        for seq in range(self._next_seq[key], self._next_seq[key] + count):
            priority = "high" if seq % HIGH_PRIORITY_EVERY == 0 else "normal"
            event = SentEvent(key, seq, sent_at, priority)
            body = {"id": event.id, "key": key, "seq": seq, "sentAt": sent_at, "priority": priority}
            data = EventData(json.dumps(body))
            data.properties = {"priority": priority}
            data.content_type = "application/json"
            batch.add(data)
            events.append(event)
        self._next_seq[key] += count
        try:
            producer.send_batch(batch)
        except Exception as problem:  # an unsent event is not expected at the target; count and go on
            self.send_errors += count
            self.last_error = f"{type(problem).__name__}: {problem}"
            return
        self.sent.update((e.id, e) for e in events)
