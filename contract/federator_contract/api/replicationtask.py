"""ReplicationTask: one flow from a source through an editor chain to one or more targets."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from federator_contract.api.base import (
    QUEUE_OR_SUBSCRIPTION_RULES,
    Condition,
    DnsLabel,
    EndpointConnection,
    EntityName,
    FedModel,
    ObjectStatus,
    PropertyName,
    SecretKeySelector,
    SqlExpression,
    SubscriptionName,
    cel,
    exactly_one,
    immutable,
    list_map,
)
from federator_contract.api.editors import Editor
from federator_contract.api.lag import ReplicationLag
from federator_contract.api.replicationapplication import (
    APPLICATION_FIELDS,
    ApplicationRef,
    SparkApplicationSettings,
)

# Re-exported: they moved to the application's module, which a task's own Spark application shares.
from federator_contract.api.replicationapplication import SparkApplicationStatus as SparkApplicationStatus
from federator_contract.api.replicationapplication import SparkResources as SparkResources
from federator_contract.api.translation import CheckpointTranslation, CheckpointTranslationStatus
from federator_contract.checkpoints import LOCAL_CHECKPOINTS_ONLY

# ----------------------------------------------------------------------------------------------- source


class StartPosition(FedModel):
    """Where a task without a checkpoint starts reading an event hub. Ignored once a checkpoint exists."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "self.position == 'enqueuedTime' ? has(self.enqueuedTime) : !has(self.enqueuedTime)",
                "enqueuedTime is required when position is enqueuedTime, and only then",
                ".enqueuedTime",
            )
        )
    )

    position: Literal["earliest", "latest", "enqueuedTime"] = "earliest"
    """`earliest` (everything retained), `latest` (only new events) or `enqueuedTime`. Default: earliest,
    so that a new task loses nothing."""
    enqueued_time: datetime | None = None
    """RFC 3339 / ISO 8601 time, e.g. `2026-11-01T00:00:00Z`; events enqueued at or after it are read."""


class EventHubSource(FedModel):
    """An event hub read partition by partition through a consumer group."""

    connection: EndpointConnection
    """The namespace holding the event hub."""
    event_hub_name: Annotated[EntityName, Field(json_schema_extra=immutable("eventHubName"))]
    """Name of the event hub. Immutable: a checkpoint belongs to one event hub."""
    consumer_group: Annotated[
        str,
        StringConstraints(
            min_length=1, max_length=50, pattern=r"^[A-Za-z0-9$]([A-Za-z0-9._\-]*[A-Za-z0-9])?$"
        ),
        Field(json_schema_extra=immutable("consumerGroup")),
    ] = "$Default"
    """Consumer group to read through; give each task its own. Default: `$Default`. Immutable."""
    partition_ids: (
        Annotated[list[Annotated[str, StringConstraints(pattern=r"^[0-9]{1,4}$")]], Field(max_length=1024)]
        | None
    ) = None
    """Read only these partitions. Default: all partitions of the event hub."""
    start_position: StartPosition = StartPosition()
    """Where to start without a checkpoint."""


class ServiceBusSource(FedModel):
    """A Service Bus queue, topic subscription, or one of their dead-letter sub-queues. Messages are
    completed at the source only after every target accepted them."""

    model_config = ConfigDict(json_schema_extra=cel(*QUEUE_OR_SUBSCRIPTION_RULES))

    connection: EndpointConnection
    """The namespace holding the entity."""
    queue_name: Annotated[EntityName, Field(json_schema_extra=immutable("queueName"))] | None = None
    """Queue to read. Immutable."""
    topic_name: Annotated[EntityName, Field(json_schema_extra=immutable("topicName"))] | None = None
    """Topic of the subscription to read. Immutable."""
    subscription_name: (
        Annotated[SubscriptionName, Field(json_schema_extra=immutable("subscriptionName"))] | None
    ) = None
    """Subscription to read. Immutable."""
    sub_queue: Literal["none", "deadLetter"] = "none"
    """`deadLetter` reads the entity's dead-letter sub-queue instead. Default: none."""
    max_messages_per_batch: Annotated[int, Field(ge=1, le=5000)] = 1000
    """Upper bound of messages held under lock by one micro-batch. Default: 1000."""


class Source(FedModel):
    """Where events come from. Set exactly one of `eventHub` or `serviceBus`."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("eventHub", "serviceBus")))

    event_hub: EventHubSource | None = None
    """An event hub."""
    service_bus: ServiceBusSource | None = None
    """A Service Bus queue or subscription."""


# ----------------------------------------------------------------------------------------------- targets


class EventHubTarget(FedModel):
    """An event hub. Partition-key streams keep their order; with equal partition counts, source partition
    *i* goes to target partition *i*, otherwise keys are re-hashed so each stream stays together."""

    connection: EndpointConnection
    """The namespace holding the event hub."""
    event_hub_name: EntityName
    """Name of the event hub."""


class ServiceBusTarget(FedModel):
    """A Service Bus queue or topic. Each message's MessageId is derived from the source identity, so
    duplicate detection on the target can drop replays."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("queueName", "topicName")))

    connection: EndpointConnection
    """The namespace holding the entity."""
    queue_name: EntityName | None = None
    """Queue to send to."""
    topic_name: EntityName | None = None
    """Topic to send to."""


class PostgresTarget(FedModel):
    """A PostgreSQL table (log projection)."""

    connection_secret_ref: SecretKeySelector
    """A Secret key holding a libpq connection URI (`postgresql://...`)."""
    table: Annotated[
        str, StringConstraints(max_length=127, pattern=r"^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$")
    ]
    """Table name, optionally schema-qualified (`schema.table`); created if missing."""
    mode: Literal["history", "compacted"] = "history"
    """`history` appends a row per event; `compacted` keeps the latest event per partition key.
    Default: history."""


class Endpoint(FedModel):
    """A destination. Set exactly one of `eventHub`, `serviceBus` or `postgres`."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("eventHub", "serviceBus", "postgres")))

    event_hub: EventHubTarget | None = None
    """An event hub."""
    service_bus: ServiceBusTarget | None = None
    """A Service Bus queue or topic."""
    postgres: PostgresTarget | None = None
    """A PostgreSQL table."""
    set_properties: (
        Annotated[dict[str, Annotated[str, StringConstraints(max_length=1024)]], Field(max_length=32)] | None
    ) = None
    """Properties stamped on every event written here (after routing), e.g. a marker that the event
    went this way."""


class Target(Endpoint):
    """A named destination with an optional routing condition."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("eventHub", "serviceBus", "postgres")))

    name: DnsLabel
    """Name of the target, unique in the task; used in status, metrics and dead-letter reasons."""
    condition: SqlExpression | None = None
    """Routing predicate in Service Bus SQL syntax over properties (`region = 'eu'`), system properties
    (`sys.ContentType = 'application/json'`) and JSON body fields (`body.order.total > 100`). An event goes
    to every target whose condition holds; a target without condition receives every event."""


# ----------------------------------------------------------------------------------------------- behaviour


class Provenance(FedModel):
    """Service-assigned metadata of the source kept in user properties, appended with `;` on every hop."""

    enabled: bool = True
    """Default: true."""
    enqueue_time_property: PropertyName = "repl-enqueue-time"
    """Source enqueue time (ISO 8601). Default: `repl-enqueue-time`, as in Microsoft's pattern documents
    (their sample code writes `repl-enqueued-time`; set this to interoperate with it)."""
    sequence_property: PropertyName = "repl-sequence"
    """Source sequence number. Default: `repl-sequence`."""
    offset_property: PropertyName = "repl-offset"
    """Source offset. Default: `repl-offset`."""


class LoopPrevention(FedModel):
    """Keeps events from bouncing between mirrored entities (the merge pattern)."""

    marker_property: PropertyName = "repl-target"
    """Property listing, `;`-separated, the entities an event has been replicated from and to; an event
    whose marker already names the target is skipped. Default: `repl-target`."""
    forward_replicated: bool = True
    """Forward events that arrived by replication (chains A→B→C). Set false for a full mesh of three or
    more mirrored entities, where every origin replicates directly. Default: true."""


class Delivery(FedModel):
    """Delivery guarantees. Nothing is acknowledged at a source before the targets accepted it."""

    effectively_once: bool = False
    """Skip, after a restart, what was already published (checked against per-batch commit records and
    the provenance metadata at the target's tail). Default: false (at-least-once; duplicates bounded by
    one batch per partition)."""


class PvcCheckpoint(FedModel):
    """A path on a PersistentVolumeClaim."""

    claim_name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    """Name of the PersistentVolumeClaim. Driver and executors both mount it (Service Bus spool files, editor
    state, commit records): ReadWriteMany, or ReadWriteOnce with every Spark pod on one node."""
    sub_path: Annotated[str, StringConstraints(max_length=1024, pattern=r"^[^/].*$")] | None = None
    """Relative path inside the volume. Default: `<namespace>/<task name>`."""


class Checkpoint(FedModel):
    """Where Spark keeps offsets and commit records. Set exactly one of `persistentVolumeClaim` or `uri`.
    Immutable: a new location means starting over."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            exactly_one("persistentVolumeClaim", "uri"), ("self == oldSelf", "checkpoint is immutable")
        )
    )

    persistent_volume_claim: PvcCheckpoint | None = None
    """A PersistentVolumeClaim path."""
    uri: (
        Annotated[
            str,
            StringConstraints(max_length=2048, pattern=r"^[a-z][a-z0-9+.-]*://.+$"),
            Field(json_schema_extra=cel(("self.startsWith('file://')", LOCAL_CHECKPOINTS_ONLY))),
        ]
        | None
    ) = None
    """A `file://` path, for local mode (`federator run`). In a cluster no Spark pod mounts a URI, so the
    operator refuses it (CheckpointNotMounted): use `persistentVolumeClaim` with a ReadWriteMany claim.
    Object stores (`abfss://`, `s3a://`, `gs://`, `hdfs://`) are refused until the app can keep its commit
    records there."""


_DEFAULTS = {name: info.get_default() for name, info in SparkApplicationSettings.model_fields.items()}


def _misplaced(field: str) -> str:
    return f"{field} belongs to the ReplicationApplication named in applicationRef: set it there, not here"


def _left_to_application(field: str, default: object) -> tuple[str, str, str]:
    """A member task may not set `field`. Its default is let through: the API server wrote the defaults
    of `driver` and `executor` into every task stored before applications existed."""
    rule = f"!has(self.applicationRef) || !has(self.{field})"
    if isinstance(default, FedModel):
        values = default.model_dump(by_alias=True)
        rule += " || (" + " && ".join(f"self.{field}.{k} == {json.dumps(v)}" for k, v in values.items()) + ")"
    return rule, _misplaced(field), f".{field}"


class Runtime(SparkApplicationSettings):
    """How the task's Spark application runs: one of its own, or the ReplicationApplication named in
    `applicationRef` (then launcher, image, serviceAccountName, driver, executor and sparkConf are the
    application's and may not be set here)."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            *(_left_to_application(wire, _DEFAULTS[name]) for name, wire in APPLICATION_FIELDS.items())
        )
    )

    application_ref: ApplicationRef | None = None
    """Run in this ReplicationApplication, of the task's namespace, instead of a Spark application of the
    task's own: its driver runs the task's query beside its other members', with the application's
    service account. The task keeps its own query settings (triggerIntervalSeconds, maxEventsPerTrigger,
    checkpoint). Default: a Spark application of the task's own."""
    trigger_interval_seconds: Annotated[int, Field(ge=0, le=3600)] = 0
    """Micro-batch interval. 0 starts the next batch as soon as the previous one ends: the lowest
    latency (an idle event hub is asked for new events every 0.25 s, every 1 s once it has had nothing
    new for 10 s, every 3 s after 30 s; a Service Bus receive waits up to 1 s). A longer interval makes
    fewer, larger batches at the price of latency. Default: 0."""
    max_events_per_trigger: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    """Upper bound of events per micro-batch across partitions. Default: no bound."""
    checkpoint: Checkpoint | None = None
    """Checkpoint location. Default: the operator's checkpoint volume, path `<namespace>/<task name>`."""

    @model_validator(mode="after")
    def _application_fields_unset(self) -> Runtime:
        if self.application_ref is None:
            return self
        misplaced = [
            wire for name, wire in APPLICATION_FIELDS.items() if getattr(self, name) != _DEFAULTS[name]
        ]
        if misplaced:
            raise ValueError("; ".join(map(_misplaced, misplaced)))
        return self


# ----------------------------------------------------------------------------------------------- spec/status


class ReplicationTaskSpec(FedModel):
    """Desired state of a ReplicationTask."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!self.editors.exists(e, (has(e.validate) && e.validate.onInvalid == 'deadLetter')"
                " || (has(e.verify) && e.verify.onFailure == 'deadLetter')"
                " || (has(e.enrich) && has(e.enrich.lookup) && e.enrich.lookup.onMissing == 'deadLetter'))"
                " || has(self.deadLetter)",
                "an editor dead-letters events, so spec.deadLetter must be set",
            ),
            (
                "!has(self.checkpointTranslation) || has(self.source.eventHub)",
                "checkpointTranslation needs an event hub source",
                ".checkpointTranslation",
            ),
        )
    )

    source: Source
    """Where events come from."""
    targets: Annotated[list[Target], Field(min_length=1, max_length=32, json_schema_extra=list_map("name"))]
    """Where events go; each may have a routing condition."""
    unrouted: Endpoint | None = None
    """Receives events that match no target's condition. Default: such events are dropped (and counted)."""
    dead_letter: Endpoint | None = None
    """Receives events an editor rejects, and events a target refuses for good (over its message size
    limit), with the reason in property `repl-dead-letter-reason`."""
    editors: Annotated[list[Editor], Field(max_length=32)] = []
    """Editor chain applied in order to every event before routing."""
    provenance: Provenance = Provenance()
    """Source metadata propagation."""
    loop_prevention: LoopPrevention | None = None
    """Set for mirrored entities (merge): marks forwarded events and skips those already forwarded."""
    delivery: Delivery = Delivery()
    """Delivery guarantee."""
    runtime: Runtime = Runtime()
    """Spark settings."""
    checkpoint_translation: CheckpointTranslation | None = None
    """Carry application consumer groups' checkpoints to the target (Event Hubs to Event Hubs)."""

    @model_validator(mode="after")
    def _translation_target(self) -> ReplicationTaskSpec:
        translation = self.checkpoint_translation
        if translation is None:
            return self
        hubs = [t.name for t in self.targets if t.event_hub is not None]
        if translation.target is not None and translation.target not in hubs:
            raise ValueError(
                f"checkpointTranslation.target {translation.target!r} is not an event hub target {hubs}"
            )
        if translation.target is None and len(hubs) != 1:
            raise ValueError(f"checkpointTranslation.target must name one of the event hub targets {hubs}")
        return self


class ReplicationTaskStatus(ObjectStatus):
    """Observed state of a ReplicationTask. Written by the operator only."""

    conditions: Annotated[list[Condition], Field(max_length=16, json_schema_extra=list_map("type"))] = []
    """`Ready`, `Reconciling`, `Stalled`, `SparkApplicationRunning`, `SourceReachable`."""
    spark_application: SparkApplicationStatus | None = None
    """The Spark application running the task."""
    active_source_member: str | None = None
    """The FailoverGroup member the source currently reads from, when it follows one."""
    last_batch_time: datetime | None = None
    """When the last micro-batch completed."""
    first_batch_on_member_time: datetime | None = None
    """When the first micro-batch read from the FailoverGroup member the source follows now completed
    (for a source that follows no group: the first batch of its query's checkpoint)."""
    events_replicated: Annotated[int, Field(ge=0)] | None = None
    """Events written to targets since the task was created."""
    events_dead_lettered: Annotated[int, Field(ge=0)] | None = None
    """Events sent to the dead-letter target."""
    events_skipped_after_switch: Annotated[int, Field(ge=0)] | None = None
    """Events a source that follows a FailoverGroup skipped because the task had handled them on another
    member."""
    events_found_written: Annotated[int, Field(ge=0)] | None = None
    """Events a replayed batch found at the targets already (written before a crash; counted once)."""
    replication_lag_seconds: float | None = None
    """Now minus the source enqueue time of the last event written, at the last batch (latency)."""
    lag: ReplicationLag | None = None
    """Events and seconds behind per source partition, and the RPO of a failover now (Event Hubs
    sources)."""
    checkpoint_translation: CheckpointTranslationStatus | None = None
    """The last checkpoint translation (`spec.checkpointTranslation`)."""
