"""Counting the demo's events at a target: every event read back with the real SDK and compared with what
the generator sent (loss, duplicates by event id, order per key, lag from send to target enqueue)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient

from federator.local.traffic import SentEvent

READ_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Received:
    id: str | None
    """None for an event that is not one of the demo's (not JSON, no id)."""
    enqueued_epoch: float


@dataclass(frozen=True)
class TargetTally:
    expected: int
    replicated: int
    """Expected events found at least once."""
    lost: int
    duplicated: int
    """Copies beyond the first."""
    unexpected: int
    """Events that were not expected here (misrouted, or sent ambiguously)."""
    out_of_order: int
    """Events found after a later event of the same key."""
    lag_p50_seconds: float | None
    """Send → target enqueue, of the events sent once the application was warm (steady state)."""
    lag_p99_seconds: float | None
    startup_lag_p50_seconds: float | None = None
    """The same for the events sent while it warmed up (its first batches: Python workers starting,
    receivers and producers opening)."""
    startup_lag_p99_seconds: float | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def read_event_hub(connection_string: str, event_hub: str) -> list[Received]:
    """Every event of the hub, partition by partition in sequence order."""
    with EventHubConsumerClient.from_connection_string(
        connection_string, consumer_group="$Default", eventhub_name=event_hub
    ) as client:
        ids = client.get_partition_ids()
        last = {p: client.get_partition_properties(p)["last_enqueued_sequence_number"] for p in ids}
    with ThreadPoolExecutor(max_workers=len(ids)) as pool:
        partitions = pool.map(lambda p: _read_partition(connection_string, event_hub, p, last[p]), ids)
        return [_received(event) for events in partitions for event in events]


def _read_partition(connection_string: str, event_hub: str, partition: str, last: int) -> list[EventData]:
    if last < 0:
        return []
    client = EventHubConsumerClient.from_connection_string(
        connection_string, consumer_group="$Default", eventhub_name=event_hub
    )
    found: list[EventData] = []
    complete, failures = threading.Event(), []

    def on_batch(_context: Any, events: list[EventData]) -> None:
        found.extend(events)
        if found and _sequence(found[-1]) >= last:
            complete.set()

    def on_error(_context: Any, error: Exception) -> None:
        failures.append(error)

    # The synchronous receive loop ends only when the client is closed, so it runs on its own thread.
    reader = threading.Thread(
        target=client.receive_batch,
        kwargs={
            "on_event_batch": on_batch,
            "on_error": on_error,
            "partition_id": partition,
            "starting_position": "-1",
            "max_batch_size": 1000,
            "max_wait_time": 1,
        },
        daemon=True,
    )
    reader.start()
    try:
        if not complete.wait(READ_TIMEOUT_SECONDS):
            detail = f": {failures[-1]}" if failures else ""
            raise TimeoutError(
                f"{event_hub} partition {partition}: could not read to sequence {last}{detail}"
            )
    finally:
        client.close()
        reader.join(10)
    return [e for e in found if _sequence(e) <= last]


def _sequence(event: EventData) -> int:
    # Received events always carry one; the SDK types it optional for events being built.
    return event.sequence_number if event.sequence_number is not None else -1


def _received(event: EventData) -> Received:
    enqueued = event.enqueued_time.timestamp() if event.enqueued_time else 0.0
    try:
        body = json.loads(event.body_as_str())
    except (ValueError, TypeError):
        return Received(None, enqueued)
    return Received(body.get("id") if isinstance(body, dict) else None, enqueued)


def tally(
    sent: Mapping[str, SentEvent],
    received: Iterable[Received],
    expected: Callable[[SentEvent], bool],
    warm_from: float = 0.0,
) -> TargetTally:
    """Compare what a target holds (in partition and sequence order) with the sent events it should; lags
    of events sent before ``warm_from`` (epoch seconds) are the start-up's."""
    wanted = {i for i, e in sent.items() if expected(e)}
    seen: set[str] = set()
    duplicated = unexpected = out_of_order = 0
    newest: dict[str, int] = {}
    lags: list[float] = []
    startup: list[float] = []
    for event in received:
        if event.id is None or event.id not in wanted:
            unexpected += 1
            continue
        if event.id in seen:
            duplicated += 1
            continue
        seen.add(event.id)
        origin = sent[event.id]
        if origin.seq < newest.get(origin.key, -1):
            out_of_order += 1
        newest[origin.key] = max(origin.seq, newest.get(origin.key, -1))
        (lags if origin.sent_at >= warm_from else startup).append(event.enqueued_epoch - origin.sent_at)
    lags.sort()
    startup.sort()
    return TargetTally(
        expected=len(wanted),
        replicated=len(seen),
        lost=len(wanted - seen),
        duplicated=duplicated,
        unexpected=unexpected,
        out_of_order=out_of_order,
        lag_p50_seconds=_percentile(lags, 0.50),
        lag_p99_seconds=_percentile(lags, 0.99),
        startup_lag_p50_seconds=_percentile(startup, 0.50),
        startup_lag_p99_seconds=_percentile(startup, 0.99),
    )


def _percentile(ordered: list[float], q: float) -> float | None:
    """Nearest rank."""
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))], 3)
