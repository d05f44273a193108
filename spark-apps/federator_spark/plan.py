"""What a write task does, pickled to the executors: targets, routing, editors, pattern metadata and the
delivery mode. The driver builds it from the task config (``planning``); a sink used by name builds it
from its options (:func:`plan_from_sink_options`). A Python worker that unpickles a plan imports this
module and the classes the plan holds, never the task's API models, which are the driver's
(docs/replication.md, "Memory of one application")."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from federator_contract.checkpoints import CheckpointLayout
from federator_spark.connections import Connection
from federator_spark.editors.base import EventEditor
from federator_spark.following import FollowPlan
from federator_spark.provenance import LoopSettings, ProvenanceSettings
from federator_spark.routing import Router

# The dead-letter endpoint's name in publishers, counts and status (target names are DNS labels,
# so no target can take it).
DEAD_LETTER = "deadLetter"
RETAIN_BATCHES = 100  # the default of `spark.sql.streaming.minBatchesToRetain`


TargetKind = Literal["eventHub", "serviceBus", "postgres"]


@dataclass(frozen=True)
class TargetPlan:
    name: str
    kind: TargetKind
    connection: Connection  # for PostgreSQL: the libpq URI, by environment variable
    entity: str  # event hub, queue, topic or table name
    is_topic: bool = False
    mode: Literal["history", "compacted"] = "history"  # PostgreSQL log projection only
    set_properties: dict[str, str] = field(default_factory=dict)  # stamped on every event written here

    @cached_property  # read for every event: the host comes out of a connection string
    def identity(self) -> str:
        """Names the entity in loop-prevention markers."""
        if self.kind == "postgres":
            return f"postgres/{self.entity}"
        return f"{self.connection.host}/{self.entity}"


@dataclass(frozen=True)
class WritePlan:
    task: str
    namespace: str
    targets: dict[str, TargetPlan]
    router: Router
    editors: list[EventEditor] = field(default_factory=list)
    dead_letter: TargetPlan | None = None  # receives the events editors reject
    provenance: ProvenanceSettings = field(default_factory=ProvenanceSettings)
    loop: LoopSettings | None = None
    effectively_once: bool = False
    state_dir: str | None = None
    status_file: str | None = None
    following: FollowPlan | None = None  # the source follows a FailoverGroup
    retain_batches: int = RETAIN_BATCHES  # Spark's `minBatchesToRetain`: commit records kept as long

    def __post_init__(self) -> None:
        if self.effectively_once and self.state_dir is None:
            raise ValueError("effectively-once delivery needs a checkpoint location for its commit records")

    @property
    def endpoints(self) -> dict[str, TargetPlan]:
        """Everything this task writes to: the targets (with `unrouted`) and the dead-letter endpoint."""
        if self.dead_letter is None:
            return self.targets
        return {**self.targets, DEAD_LETTER: self.dead_letter}


def plan_from_sink_options(kind: Literal["eventHub", "serviceBus"], options: Any) -> WritePlan:
    """A single, unconditional target from the options of the `eventhubs` / `servicebus` sinks:
    ``connection``, ``eventHubName`` | ``queueName`` | ``topicName``, optional ``checkpointLocation``,
    ``effectivelyOnce`` (true/false), ``provenance`` (true/false), ``loopPreventionMarker``."""
    if "connection" not in options:
        raise ValueError("option 'connection' is required")
    connection = Connection.from_option(options["connection"])
    if kind == "eventHub":
        if "eventHubName" not in options:
            raise ValueError("option 'eventHubName' is required")
        target = TargetPlan("default", kind, connection, options["eventHubName"])
    else:
        queue, topic = options.get("queueName"), options.get("topicName")
        if (queue is None) == (topic is None):
            raise ValueError("set exactly one of the options 'queueName' and 'topicName'")
        target = TargetPlan("default", kind, connection, queue or topic, topic is not None)
    checkpoint = options.get("checkpointLocation")
    marker = options.get("loopPreventionMarker")
    return WritePlan(
        task=options.get("taskName", "adhoc"),
        namespace=options.get("taskNamespace", ""),
        targets={target.name: target},
        router=Router.build({target.name: None}, has_unrouted=False),
        provenance=ProvenanceSettings(enabled=options.get("provenance", "true").lower() == "true"),
        loop=LoopSettings(marker) if marker else None,
        effectively_once=options.get("effectivelyOnce", "false").lower() == "true",
        state_dir=str(CheckpointLayout.at(checkpoint).state_dir) if checkpoint else None,
        status_file=options.get("statusFile"),
    )
