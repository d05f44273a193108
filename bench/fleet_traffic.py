"""The fleet benchmark's traffic and read-back (``bench.fleet``): its tasks as pairs of hubs, the events sent
to their sources (each stamped with its send time, each body starting with its index in its hub), and the
targets read back: lost and duplicated events per task, the quiet tasks' lag in measured windows."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench.processes import Emulators
from bench.replication import hub_count
from bench.replication_latency import SEND_TIME, percentile
from bench.tasks import ID_WIDTH, PARTITIONS, body, task_config

TICK_SECONDS = 0.25  # the quiet tasks' traffic: one batch per source hub each tick
START_TIMEOUT = 300.0  # an application's start on a loaded machine, and a task's first event


@dataclass(frozen=True)
class Pair:
    """A task: the hub it copies and the hub it copies to."""

    source: str
    target: str


@dataclass
class Fleet:
    """The emulators, where files go, and how many events each source hub was sent (each event's body
    starts with its index in its hub: the identity the read-back counts)."""

    emus: Emulators
    workdir: Path
    trigger_seconds: int | None = None  # the tasks' trigger interval (None: the API's default, 0)
    sent: Counter[str] = field(default_factory=Counter)

    def config_file(self, pair: Pair, directory: Path) -> Path:
        """The task's config, written as a ConfigMap update would be (a hidden file, then a rename)."""
        hidden, path = directory / f".{pair.source}.json", directory / f"{pair.source}.json"
        config = task_config(self.workdir, self.emus, pair.source, pair.target, self.trigger_seconds)
        hidden.write_text(config.to_json(), encoding="utf-8")
        os.replace(hidden, path)
        return path

    def send_one(self, hub: str) -> None:
        with EventHubProducerClient.from_connection_string(self.emus.cs(hub), eventhub_name=hub) as producer:
            self.send_stamped(producer, hub, partition=0, count=1)

    def send_stamped(self, producer: EventHubProducerClient, hub: str, partition: int, count: int) -> None:
        batch = producer.create_batch(partition_id=str(partition))
        for index in range(self.sent[hub], self.sent[hub] + count):
            data = EventData(body(index))
            data.properties = {SEND_TIME: repr(time.time())}
            batch.add(data)
        producer.send_batch(batch)
        self.sent[hub] += count

    def first_event(self, pair: Pair, place: Callable[[Pair], object], log: Path) -> float:
        """Seconds from ``place(pair)``, which makes the task run, until the event sent to its source just
        before is at its target."""
        self.send_one(pair.source)
        started = time.monotonic()
        place(pair)
        wait_for_count(self.emus, pair.target, 1, START_TIMEOUT, log)
        return round(time.monotonic() - started, 2)


def pairs(prefix: str, count: int) -> list[Pair]:
    return [Pair(f"in-{prefix}{i:03d}", f"out-{prefix}{i:03d}") for i in range(count)]


def wait_for_count(
    emus: Emulators, hub: str, at_least: int, timeout: float, log: Path, *, stall: float | None = None
) -> None:
    """Until ``hub`` holds ``at_least`` events (one client, asked every 0.2 s); not within ``timeout`` s,
    an error that shows the last lines of the application's ``log``. ``stall``: past ``timeout``, wait on
    for as long as the hub grew within the last ``stall`` s (a backlog's catch-up, whose pace is the
    machine's: 2,000 events a batch between the other members' batches)."""
    with EventHubProducerClient.from_connection_string(emus.cs(hub), eventhub_name=hub) as client:
        ids = client.get_partition_ids()

        def held() -> int:
            return sum(client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1 for p in ids)

        last = reached(held, at_least, timeout, stall)
    if last >= at_least:
        return
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
    growing = f", or grow for {stall:.0f} s" if stall is not None else ""
    raise RuntimeError(
        f"{hub} did not reach {at_least} events in {timeout:.0f} s{growing} (it held {last}); {log}:\n{tail}"
    )


def reached(count: Callable[[], int], at_least: int, timeout: float, stall: float | None = None) -> int:
    """Ask ``count`` every 0.2 s until it is ``at_least``, for ``timeout`` s, and past that while it grew
    within the last ``stall`` s; its last answer."""
    started = grew = time.monotonic()
    last = count()
    while last < at_least:
        now = time.monotonic()
        if now - started > timeout and (stall is None or now - grew > stall):
            break
        time.sleep(0.2)
        held = count()
        if held > last:
            grew = time.monotonic()
        last = held
    return last


class Traffic(threading.Thread):
    """``rate`` events/s into each hub of ``hubs``, one batch per hub each tick, the partitions in turn;
    paced against the schedule, so a slow send does not lower the rate. A failed send ends it (raised by
    ``stop``)."""

    def __init__(self, fleet: Fleet, hubs: list[str], rate: int) -> None:
        super().__init__(name="fleet-traffic", daemon=True)
        self.fleet, self.hubs, self.rate = fleet, hubs, rate
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.started = time.time()

    def run(self) -> None:
        self.started = time.time()
        cs = self.fleet.emus.cs
        producers = {
            h: EventHubProducerClient.from_connection_string(cs(h), eventhub_name=h) for h in self.hubs
        }
        per_tick = max(1, round(self.rate * TICK_SECONDS))
        started, ticks = time.monotonic(), 0
        try:
            while not self.stopping.is_set():
                for hub, producer in producers.items():
                    self.fleet.send_stamped(producer, hub, ticks % PARTITIONS, per_tick)
                ticks += 1
                self.stopping.wait(max(0.0, started + ticks * per_tick / self.rate - time.monotonic()))
        except BaseException as error:  # raised again by stop(), in the benchmark's thread
            self.error = error
        finally:
            for producer in producers.values():
                producer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        if self.error is not None:
            raise RuntimeError(f"the quiet tasks' traffic failed: {self.error}") from self.error


@contextmanager
def quiet_traffic(fleet: Fleet, quiet: list[Pair], rate: int, warmup: float, log: Path) -> Iterator[float]:
    """The quiet tasks' traffic (``Traffic``) until they are warm (``warmup`` s, and they have replicated
    what they were sent by then: each first starts and opens its clients); yields how long that took.
    Stopped at the end, and what was sent last replicated."""
    traffic = Traffic(fleet, [pair.source for pair in quiet], rate)
    traffic.start()
    try:
        time.sleep(warmup)
        drain(fleet, quiet, log)
        yield time.time() - traffic.started
    finally:
        traffic.stop()
    drain(fleet, quiet, log)


def drain(fleet: Fleet, tasks: list[Pair], log: Path) -> None:
    """Until each task's target holds what its source had been sent when this began."""
    sent = {pair: fleet.sent[pair.source] for pair in tasks}
    for pair, count in sent.items():
        wait_for_count(fleet.emus, pair.target, count, START_TIMEOUT, log)


def read_back(emus: Emulators, hub: str) -> list[tuple[str, float | None, float]]:
    """Every event the hub holds: its identity, its send time (if stamped) and its enqueue time."""
    held = hub_count(emus.cs(hub), hub)
    found: list[tuple[str, float | None, float]] = []
    if not held:
        return found
    lock, complete = threading.Lock(), threading.Event()  # a receiving thread per partition

    def on_batch(_context: Any, events: list[EventData]) -> None:
        with lock:
            for event in events:
                stamp = (event.properties or {}).get(SEND_TIME.encode())
                enqueued = event.enqueued_time.timestamp() if event.enqueued_time else time.time()
                found.append((event.body_as_str()[:ID_WIDTH], float(stamp) if stamp else None, enqueued))
            if len(found) >= held:
                complete.set()

    consumer = EventHubConsumerClient.from_connection_string(emus.cs(hub), "$Default", eventhub_name=hub)
    options = {"on_event_batch": on_batch, "starting_position": "-1", "max_batch_size": 500, "prefetch": 1000}
    reader = threading.Thread(target=consumer.receive_batch, kwargs=options)
    reader.start()
    complete.wait(60 + held / 2000)
    consumer.close()
    reader.join(30)
    with lock:
        return list(found)


def tally(fleet: Fleet, targets: dict[str, str], windows: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Each task's target (target hub → its source hub) read back: lost and duplicated events against
    what its source was sent, and the stamped events' lag in each window: all tasks' together, each
    task's p99 (a scheduler that favours some tasks shows there: by name, by start order) and the worst."""
    per_task: dict[str, dict[str, int]] = {}
    lags: dict[str, list[float]] = {name: [] for name in windows}
    p99s: dict[str, dict[str, float]] = {name: {} for name in windows}
    for target, source in targets.items():
        expected = fleet.sent[source]
        events = read_back(fleet.emus, target)
        seen = Counter(identity for identity, _, _ in events)
        wanted = {f"{i:0{ID_WIDTH}d}" for i in range(expected)}
        per_task[source] = {"lost": len(wanted - set(seen)), "duplicated": sum(n - 1 for n in seen.values())}
        for name, (begin, end) in windows.items():
            mine = [(at - sent) * 1000 for _, sent, at in events if sent is not None and begin <= sent < end]
            lags[name] += mine
            if mine:
                p99s[name][source] = spread(mine)["p99"]
    return {
        "tasks": len(per_task),
        "lost": sum(t["lost"] for t in per_task.values()),
        "duplicated": sum(t["duplicated"] for t in per_task.values()),
        "tasks_not_exact": {k: v for k, v in per_task.items() if v["lost"] or v["duplicated"]},
        "quiet_lag_ms": {name: spread(values) for name, values in lags.items()},
        "quiet_task_p99_ms": p99s,
        "worst_quiet_task_p99_ms": {name: max(each.values(), default=None) for name, each in p99s.items()},
    }


def spread(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": percentile(ordered, 0.5),
        "p99": percentile(ordered, 0.99),
        "max": round(ordered[-1], 1) if ordered else None,
    }
