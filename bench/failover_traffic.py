"""The traffic of `bench/failover.py`: a producer pacing keyed events into the member the group publishes
for producers, and readers of a hub from its start (the archive, and the geo copy on the secondary)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench.failover_run import LocalRun
from federator.local.drill import Archived, Sent

logger = logging.getLogger("bench")


@dataclass
class Producer:
    """Paces ``rate`` keyed events/s into the member the group publishes for producers."""

    run: LocalRun
    rate: float
    keys: int
    stopping: threading.Event = field(default_factory=threading.Event)
    sent: list[Sent] = field(default_factory=list)
    first_send: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    """Member → when each stretch of sends to it began (the first successful send after a move)."""
    failures: int = 0

    def loop(self) -> None:
        clients: dict[str, EventHubProducerClient] = {}
        partitions: dict[str, list[str]] = {}
        numbers = [0] * self.keys
        key, member, tick = 0, "", 0.05
        per_tick = max(1, round(self.rate * tick))
        next_tick = time.monotonic()
        try:
            while not self.stopping.is_set():
                published = (self.run.endpoints() or {}).get("producerMember") or member
                if published not in clients:
                    # No retries: a send to a member that went down fails at once, and the next tick
                    # reads the endpoints again, as a client following them would.
                    clients[published] = EventHubProducerClient.from_connection_string(
                        self.run.connection(published), eventhub_name="orders", retry_total=0
                    )
                    partitions[published] = clients[published].get_partition_ids()
                client, ids = clients[published], partitions[published]
                batches: dict[str, list[Sent]] = defaultdict(list)
                for _ in range(per_tick):
                    batches[ids[key % len(ids)]].append(Sent(key, numbers[key], published, 0.0))
                    numbers[key] += 1
                    key = (key + 1) % self.keys
                if self._send(client, batches) and published != member:
                    self.first_send[published].append(time.time())
                    member = published
                next_tick += tick
                self.stopping.wait(max(0.0, next_tick - time.monotonic()))
        finally:
            for client in clients.values():
                client.close()

    def _send(self, client: EventHubProducerClient, batches: dict[str, list[Sent]]) -> bool:
        """Send one tick's events, a batch per partition; False when a send failed (that batch and the
        tick's others are counted as never sent: a producer would retry them). The first failure ends the
        tick, as a producer that follows the published endpoint would re-read it then rather than try
        the other partitions of a member that is down (each attempt took ~1.6 s)."""
        ok = True
        for partition, events in batches.items():
            now = time.time()
            batch = client.create_batch(partition_id=partition)
            for event in events:
                body = {"k": event.key, "n": event.number, "m": event.member, "t": now}
                batch.add(EventData(json.dumps(body)))
            try:
                client.send_batch(batch)
            except Exception as err:  # the bench goes on: a failed send is counted
                logger.warning("send to %s failed: %s", events[0].member, err)
                self.failures += 1
                ok = False
                break
            self.sent += [Sent(e.key, e.number, e.member, now) for e in events]
        return ok


@dataclass
class Reader:
    """Reads a hub of an emulator namespace from its start (or from the events enqueued since ``since``,
    epoch seconds), all partitions."""

    run: LocalRun
    namespace: str
    hub: str
    since: float | None = None
    events: list[Archived] = field(default_factory=list)
    client: EventHubConsumerClient | None = None
    partitions: int | None = None
    at_end: set[str] = field(default_factory=set)
    """The partitions read to their end once (a wait found nothing more)."""

    def loop(self) -> None:
        self.client = EventHubConsumerClient.from_connection_string(
            self.run.connection(self.namespace), consumer_group="$Default", eventhub_name=self.hub
        )
        self.partitions = len(self.client.get_partition_ids())

        def on_batch(context: Any, events: list[Any]) -> None:
            now = time.time()
            if not events:
                self.at_end.add(context.partition_id)
            for event in events:
                body = json.loads(event.body_as_str())
                self.events.append(Archived(body["k"], body["n"], body["m"], body["t"], now))

        start: Any = "-1" if self.since is None else datetime.fromtimestamp(self.since, UTC)
        with self.client:
            self.client.receive_batch(
                on_batch, starting_position=start, max_batch_size=500, max_wait_time=0.2
            )

    @property
    def read_to_end(self) -> bool:
        """Every partition read up to its end (as it was then)."""
        return self.partitions is not None and len(self.at_end) >= self.partitions

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()

    def first_from(self, member: str, after: float) -> float | None:
        """When the first event sent to ``member`` after ``after`` was read."""
        times = [e.at for e in list(self.events) if e.member == member and e.sent_at >= after]
        return min(times) if times else None

    def settle(self, quiet: float) -> None:
        """Until nothing new has been read for ``quiet`` seconds."""
        count, since = -1, time.monotonic()
        while time.monotonic() - since < quiet:
            if len(self.events) != count:
                count, since = len(self.events), time.monotonic()
            time.sleep(0.2)
