"""The traffic of `bench/failover.py`: a producer pacing keyed events into the member the group publishes
for producers, readers of a hub from its start (the archive, and the geo copy on the secondary), the wait
for the archive once the traffic stopped (:func:`settle`), and what a kill left on the primary as read
back once it is back (:func:`read_back`, :func:`left_on_primary`, :func:`geo_rpo`)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench.failover_run import MEMBERS, LocalRun
from federator.local.drill import Archived, Sent, wait_until

logger = logging.getLogger("bench")

SETTLE_QUIET_SECONDS = 30.0
"""The archive unchanged this long while events are missing: the wait ends, and what is missing is not
settled unless shown lost. The first batches of a query took 23-31 s under a load of 16-20."""
SETTLE_LIMIT_SECONDS = 300.0
SETTLE_POLL_SECONDS = 0.5
READ_BACK_MARGIN = 10.0


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


@dataclass(frozen=True)
class Tail:
    """A partition's end as its hub reports it: the last sequence number and when it was enqueued."""

    sequence: int | None
    """None: the partition holds nothing."""
    enqueued: float | None


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
    last_read: dict[str, int] = field(default_factory=dict)
    """Per partition, the sequence number of the last event read."""

    def loop(self) -> None:
        self.client = EventHubConsumerClient.from_connection_string(
            self.run.connection(self.namespace), consumer_group="$Default", eventhub_name=self.hub
        )
        self.partitions = len(self.client.get_partition_ids())

        def on_batch(context: Any, events: list[Any]) -> None:
            now = time.time()
            for event in events:
                body = json.loads(event.body_as_str())
                self.events.append(Archived(body["k"], body["n"], body["m"], body["t"], now))
                self.last_read[context.partition_id] = event.sequence_number

        start: Any = "-1" if self.since is None else datetime.fromtimestamp(self.since, UTC)
        with self.client:
            self.client.receive_batch(
                on_batch, starting_position=start, max_batch_size=500, max_wait_time=0.2
            )

    def tails(self) -> dict[str, Tail]:
        """Each partition's end now, asked on a connection of its own (the reading one is busy)."""
        client = EventHubConsumerClient.from_connection_string(
            self.run.connection(self.namespace), consumer_group="$Default", eventhub_name=self.hub
        )
        with client:
            found = {}
            for partition in client.get_partition_ids():
                tail = client.get_partition_properties(partition)
                empty = tail["is_empty"]
                found[partition] = Tail(
                    None if empty else tail["last_enqueued_sequence_number"],
                    None if empty else tail["last_enqueued_time_utc"].timestamp(),
                )
            return found

    def read_through(self, tails: dict[str, Tail]) -> bool:
        """Whether every partition is read up to ``tails`` (see :func:`read_through`)."""
        return read_through(self.last_read, tails, self.since)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()

    def first_from(self, member: str, after: float) -> float | None:
        """When the first event sent to ``member`` after ``after`` was read."""
        times = [e.at for e in list(self.events) if e.member == member and e.sent_at >= after]
        return min(times) if times else None

    def held(self) -> set[tuple[int, int]]:
        """The (key, number) of the events read so far."""
        return {(e.key, e.number) for e in list(self.events)}

    def settle(self, quiet: float) -> None:
        """Until nothing new has been read for ``quiet`` seconds."""
        count, since = -1, time.monotonic()
        while time.monotonic() - since < quiet:
            if len(self.events) != count:
                count, since = len(self.events), time.monotonic()
            time.sleep(0.2)


@dataclass(frozen=True)
class Settled:
    """The archive once the traffic stopped: the events sent that it lacked when the wait ended, as lost
    (the archive, read to its end, lacks them and the follower will not copy them) or not settled (they
    may yet come: the follower still had events to copy, or its lag was not measured since the traffic
    stopped, or the archive was not read to its end)."""

    lost: int
    not_settled: int
    waited_s: float
    longest_pause_s: float
    """The longest the archive did not grow during the wait."""


@dataclass(frozen=True)
class Archive:
    """What :func:`settle` watches: what the archive's reader holds (the (key, number) of the events),
    whether it has read the archive to its end as the hub reports it now, and the events the follower
    has yet to copy by a lag measured since the traffic stopped (None: not measured since)."""

    held: Callable[[], set[tuple[int, int]]]
    read_to_end: Callable[[], bool]
    behind: Callable[[], int | None]


def settle(
    archive: Archive,
    wanted: set[tuple[int, int]],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Settled:
    """Wait while the archive still grows: until it holds every event ``wanted``, or the follower has
    nothing left to copy and the archive is read to its end (the events missing then are lost), or the
    archive has not grown for ``SETTLE_QUIET_SECONDS``; at most ``SETTLE_LIMIT_SECONDS``."""
    began = last_growth = clock()
    count, longest, read = -1, 0.0, False
    while True:
        found, now = archive.held(), clock()
        if len(found) != count:
            count, longest, last_growth = len(found), max(longest, now - last_growth), now
        missing, left = len(wanted - found), archive.behind()
        if not missing:
            break
        if left == 0 and archive.read_to_end():
            read, missing = True, len(wanted - archive.held())  # the reader went on meanwhile
            break
        if now - last_growth >= SETTLE_QUIET_SECONDS or now - began >= SETTLE_LIMIT_SECONDS:
            read = left is not None and archive.read_to_end()
            missing = len(wanted - archive.held())
            break
        sleep(SETTLE_POLL_SECONDS)
    lost, not_settled = classify(missing, left if read else None)
    return Settled(lost, not_settled, round(now - began, 3), round(max(longest, now - last_growth), 3))


def classify(missing: int, behind: int | None) -> tuple[int, int]:
    """``missing`` events (the archive read to its end) as (lost, not settled): as many as the follower
    still has to copy may yet come, all of them when that is not known (None); the rest it will never
    copy (left on a member it no longer reads)."""
    coming = missing if behind is None else min(missing, behind)
    return missing - coming, coming


def read_through(last_read: dict[str, int], tails: dict[str, Tail], since: float | None) -> bool:
    """Whether a reader that read ``last_read`` (per partition, the last sequence number) from the events
    enqueued since ``since`` has read every partition up to ``tails``. A partition's end is its last
    sequence number, not the first wait that found nothing: right after a namespace comes back, a receiver
    may wait in vain before its first events arrive."""
    for partition, tail in tails.items():
        if tail.sequence is None or (since is not None and (tail.enqueued or 0.0) < since):
            continue  # nothing in it, or nothing enqueued since
        if last_read.get(partition, -1) < tail.sequence:
            return False
    return True


def read_back(run: LocalRun, member: str, since: float, timeout: float) -> tuple[list[Archived], int]:
    """``member``'s `orders` events enqueued since ``since``, read to its end as it is now (nothing
    reaches it meanwhile: a primary back from an outage before the failback); and how many partitions it
    has."""
    reader = Reader(run, member, "orders", since=since)
    tails = reader.tails()
    thread = threading.Thread(target=reader.loop, daemon=True)
    thread.start()
    try:
        wait_until(lambda: reader.read_through(tails), f"{member} could not be read back", timeout)
    finally:
        reader.stop()
        thread.join(30)
    assert reader.partitions is not None
    return list(reader.events), reader.partitions


def reached(copies: Sequence[Archived]) -> dict[int, int]:
    """Per key, the highest number the geo copy holds: a key keeps its partition on every hub and the
    task copies a partition in order, so this is where the copy stands in that key."""
    found: dict[int, int] = {}
    for copy in copies:
        found[copy.key] = max(copy.number, found.get(copy.key, -1))
    return found


def _beyond(key: int, number: int, copied: dict[int, int]) -> bool:
    return number > copied.get(key, -1)


def read_from(sent: Sequence[Sent], copied: dict[int, int], killed: float) -> float:
    """Where reading the primary back may start: before the oldest event sent to it past where the copy
    stands (with a margin for events whose send failed but were stored), or shortly before the kill."""
    missing = [s.at for s in sent if s.member == MEMBERS[0] and _beyond(s.key, s.number, copied)]
    return min([*missing, killed - READ_BACK_MARGIN]) - READ_BACK_MARGIN


def left_on_primary(
    held: Sequence[Archived], copied: dict[int, int], revived: float
) -> frozenset[tuple[int, int]]:
    """What the primary held when it came back (sent before then: nothing reaches it while it is down,
    and producers return only with the failback) past where the geo copy stood: what the switch left
    behind, counted as the group confirms it (the source's tails against the task's positions). Events
    whose send failed but were stored count too."""
    return frozenset(
        (e.key, e.number) for e in held if e.sent_at < revived and _beyond(e.key, e.number, copied)
    )


def geo_rpo(
    sent: Sequence[Sent], left: frozenset[tuple[int, int]], killed: float, partitions: int
) -> float | None:
    """The worst partition's span from the newest event copied to the newest left behind (send times; key
    *k* is in partition *k mod partitions*), as the drivers measure it with enqueue times."""
    spans = []
    for partition in range(partitions):
        before = [
            s for s in sent if s.member == MEMBERS[0] and s.at < killed and s.key % partitions == partition
        ]
        missing = [s.at for s in before if (s.key, s.number) in left]
        if missing:
            copied = [s.at for s in before if (s.key, s.number) not in left]
            spans.append(max(0.0, max(missing) - max(copied, default=min(missing))))
    return round(max(spans), 3) if spans else None
