"""What an Event Hubs stream reader reads: typed, checked once. A ReplicationTask's driver plans it from the
task config; the ``eventhubs`` data source reads it from its string options (:meth:`from_options`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from federator_spark.connections import Connection
from federator_spark.sources.trigger_phase import TriggerPhase

START_POSITIONS = ("earliest", "latest", "enqueuedTime")


@dataclass(frozen=True)
class HubSourceSettings:
    connection: Connection
    event_hub: str
    consumer_group: str = "$Default"
    partition_ids: tuple[str, ...] | None = None
    """Only these partitions (default: all)."""
    start_position: str = "earliest"
    start_time: datetime | None = None
    """Where ``enqueuedTime`` starts."""
    max_events: int | None = None
    """At most this many events per batch, across partitions."""
    receive_timeout: float = 60.0
    """A read that makes no progress for this long, the namespace answering, fails the batch."""
    status_file: str | None = None
    """Where an outage of the event hub is reported while it is retried."""
    slice_tasks: int | None = None
    """Read in slices: at most this many Spark tasks per batch (default: a task per partition)."""
    start_file: str | None = None
    """Where the first start positions are kept until the checkpoint's first batch is committed (default:
    nowhere, read again at each start)."""
    phase: TriggerPhase | None = None
    """Where in each trigger interval the batches begin (a paced member of a shared application)."""

    def __post_init__(self) -> None:
        if self.start_position not in START_POSITIONS:
            raise ValueError(f"startPosition must be one of {START_POSITIONS}, not {self.start_position!r}")
        if self.start_position == "enqueuedTime" and self.start_time is None:
            raise ValueError("startPosition enqueuedTime needs the option 'startEnqueuedTime'")
        if self.max_events is not None and self.max_events < 1:
            raise ValueError("maxEventsPerTrigger must be at least 1")
        if self.slice_tasks is not None and self.slice_tasks < 1:
            raise ValueError("slice_tasks must be at least 1")

    @classmethod
    def from_options(cls, options: Any) -> HubSourceSettings:
        """The options of the ``eventhubs`` reader: see :class:`EventHubsStreamReader`."""
        if "connection" not in options or "eventHubName" not in options:
            raise ValueError("eventhubs source needs the options 'connection' and 'eventHubName'")
        ids, limit = options.get("partitionIds"), options.get("maxEventsPerTrigger")
        start_time = options.get("startEnqueuedTime")
        return cls(
            connection=Connection.from_option(options["connection"]),
            event_hub=options["eventHubName"],
            consumer_group=options.get("consumerGroup", "$Default"),
            partition_ids=tuple(p.strip() for p in ids.split(",")) if ids else None,
            start_position=options.get("startPosition", "earliest"),
            start_time=parse_time(start_time) if start_time else None,
            max_events=int(limit) if limit else None,
            receive_timeout=float(options.get("receiveTimeoutSeconds", "60")),
            status_file=options.get("statusFile"),
            start_file=options.get("startPositionsFile"),
        )


def parse_time(text: str) -> datetime:
    """An ISO 8601 time, ``Z`` for UTC included."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
