"""What a write task does, built once on the driver from the task config (or a sink's options) and
pickled to the executors: targets, routing, editors, pattern metadata and the delivery mode; and how
executors reach each endpoint of the task (:func:`connection_for`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from federator_contract.api.base import EndpointConnection
from federator_contract.api.replicationtask import Endpoint
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.checks import startup_findings
from federator_contract.checks.names import UNROUTED
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import checkpoint_layout
from federator_spark.connections import Connection
from federator_spark.editors import build_chain
from federator_spark.editors.base import EventEditor
from federator_spark.following import FollowPlan, follow_plan
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


def _target(name: str, endpoint: Endpoint, config: TaskConfig) -> TargetPlan:
    stamped = dict(endpoint.set_properties or {})
    if endpoint.event_hub is not None:
        hub = endpoint.event_hub
        connection = connection_for(config, hub.connection)
        return TargetPlan(name, "eventHub", connection, hub.event_hub_name, set_properties=stamped)
    if endpoint.service_bus is not None:
        bus = endpoint.service_bus
        entity = bus.queue_name or bus.topic_name
        assert entity is not None
        return TargetPlan(
            name,
            "serviceBus",
            connection_for(config, bus.connection),
            entity,
            bus.topic_name is not None,
            set_properties=stamped,
        )
    assert endpoint.postgres is not None
    table = endpoint.postgres
    return TargetPlan(
        name,
        "postgres",
        Connection(connection_string_env=config.secret_env_for(table.connection_secret_ref)),
        table.table,
        mode=table.mode,
        set_properties=stamped,
    )


def plan_from_task(config: TaskConfig, layout: CheckpointLayout | None = None) -> WritePlan:
    """``layout``: the task's paths, when the caller has them already (default: the config's)."""
    spec = config.spec
    # The checks `federator validate` and the operator run too: a spec they pass starts here.
    findings = startup_findings(spec)
    if findings:
        raise TaskConfigError("; ".join(str(f) for f in findings))
    targets = {t.name: _target(t.name, t, config) for t in spec.targets}
    if spec.unrouted is not None:
        targets[UNROUTED] = _target(UNROUTED, spec.unrouted, config)
    dead_letter = _target(DEAD_LETTER, spec.dead_letter, config) if spec.dead_letter else None
    provenance = spec.provenance
    loop = spec.loop_prevention
    layout = layout or checkpoint_layout(config)
    return WritePlan(
        task=config.name,
        namespace=config.namespace,
        targets=targets,
        router=Router.build({t.name: t.condition for t in spec.targets}, spec.unrouted is not None),
        editors=build_chain(spec.editors, config),
        dead_letter=dead_letter,
        provenance=ProvenanceSettings(
            provenance.enabled,
            provenance.enqueue_time_property,
            provenance.sequence_property,
            provenance.offset_property,
        ),
        loop=LoopSettings(loop.marker_property, loop.forward_replicated) if loop else None,
        effectively_once=spec.delivery.effectively_once,
        state_dir=str(layout.state_dir),
        status_file=str(layout.status_file),  # the task's, not the member's: counts go on across a switch
        following=follow_plan(config, layout),
    )


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


def connection_for(config: TaskConfig, endpoint: EndpointConnection) -> Connection:
    """How executors reach ``endpoint``'s namespace."""
    if endpoint.secret_ref is not None:
        return Connection(connection_string_env=config.secret_env_for(endpoint.secret_ref))
    if endpoint.workload_identity is not None:
        identity = endpoint.workload_identity
        return Connection(
            fully_qualified_namespace=identity.fully_qualified_namespace, client_id=identity.client_id
        )
    if endpoint.emulator is not None:
        path = config.emulator_connection_files.get(endpoint.emulator.namespace)
        if path is None:
            raise TaskConfigError(
                f"emulatorConnectionFiles has no connection for emulator namespace "
                f"{endpoint.emulator.namespace!r} (emulator connections exist in local mode only)"
            )
        return Connection(connection_string_file=path)
    raise TaskConfigError(
        "a failoverGroupRef connection reaches the app unresolved: the operator writes the followed "
        "member's connection into the task config"
    )
