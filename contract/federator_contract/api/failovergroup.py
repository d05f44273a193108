"""FailoverGroup: a primary and secondaries; publishes the active endpoint for producers and consumers."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from federator_contract.api.base import (
    QUEUE_OR_SUBSCRIPTION_RULES,
    Condition,
    DnsLabel,
    EntityName,
    FedModel,
    NamespaceConnection,
    ObjectStatus,
    QueueOrSubscription,
    ResourceName,
    StatusModel,
    SubscriptionName,
    cel,
    exactly_one,
    list_map,
)
from federator_contract.api.servicebusmirror import UUID, ArmCredential

HostName = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=253, pattern=r"^[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?(:[0-9]{1,5})?$"
    ),
]


class FailoverMember(FedModel):
    """One namespace of the group."""

    name: DnsLabel
    """Name of the member, unique in the group."""
    connection: NamespaceConnection
    """How Federator probes the namespace."""
    endpoint: HostName
    """Host name clients use for this member (published, never a connection string), e.g.
    `contoso-weu.servicebus.windows.net`."""


class ProbeEntity(FedModel):
    """An entity every member has, read by the probe's management request: an event hub (its properties are
    read) or a Service Bus queue or topic subscription (one message is peeked; nothing is received). Set
    `eventHubName`, `queueName`, or `topicName` with `subscriptionName`."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            exactly_one("eventHubName", "queueName", "topicName"),
            *QUEUE_OR_SUBSCRIPTION_RULES[1:],
        )
    )

    event_hub_name: EntityName | None = None
    """An event hub (Event Hubs namespaces)."""
    queue_name: EntityName | None = None
    """A queue (Service Bus namespaces)."""
    topic_name: EntityName | None = None
    """A topic (with `subscriptionName`)."""
    subscription_name: SubscriptionName | None = None
    """A subscription of `topicName`."""


class Probe(FedModel):
    """Health probe of each member: an AMQP connection and a management read."""

    period_seconds: Annotated[int, Field(ge=1, le=3600)] = 10
    """Time between probes. Default: 10."""
    timeout_seconds: Annotated[int, Field(ge=1, le=60)] = 5
    """Time after which a probe counts as failed. Default: 5."""
    failure_threshold: Annotated[int, Field(ge=1, le=100)] = 3
    """Consecutive failures of the active member that trigger an automatic failover. Default: 3."""
    entity: ProbeEntity | None = None
    """The entity the management read targets. Default: the first of `failback.drainEntities`; required for
    Event Hubs groups."""


class Failback(FedModel):
    """How the group returns to the primary: producers first, consumers once the secondary is drained."""

    drain_entities: Annotated[list[QueueOrSubscription], Field(max_length=64)] = []
    """Entities whose active message count on the secondary must reach 0 before consumers switch back."""
    drain_timeout_seconds: Annotated[int, Field(ge=0, le=86400)] = 600
    """Consumers switch back after this time even if not drained (an Event says so). Default: 600."""


class DnsZone(FedModel):
    """An Azure DNS zone (`azure-mgmt-dns`)."""

    subscription_id: Annotated[str, StringConstraints(pattern=UUID)]
    """Azure subscription ID of the zone."""
    resource_group: Annotated[str, StringConstraints(min_length=1, max_length=90, pattern=r"^[-\w._()]+$")]
    """Resource group of the zone."""
    zone_name: HostName
    """The zone, e.g. `messaging.contoso.com`."""
    credential: ArmCredential
    """Who Federator is in Azure Resource Manager."""


class DnsPublishing(FedModel):
    """Publish the active members as DNS records: a CNAME to the member's endpoint and SRV records for
    ports 5671 (AMQP) and 443 (AMQP over WebSockets, HTTPS)."""

    zone: DnsZone
    """The zone."""
    producer_record_name: DnsLabel
    """Relative record name producers resolve, e.g. `orders-send`."""
    consumer_record_name: DnsLabel
    """Relative record name consumers resolve, e.g. `orders-receive`."""
    ttl_seconds: Annotated[int, Field(ge=1, le=86400)] = 30
    """Record TTL; short, so clients follow a switch quickly. Default: 30."""


class Publishing(FedModel):
    """Where the active endpoints are published. The ConfigMap is always written."""

    config_map_name: ResourceName | None = None
    """ConfigMap with keys `producerEndpoint`, `consumerEndpoint`, `producerMember`, `consumerMember`.
    Default: `<group name>-endpoints`."""
    dns: DnsPublishing | None = None
    """Optional DNS records."""


class Switching(FedModel):
    """How a requested switch (`activeMember`, with `switchRequest`) is carried out."""

    planned: bool = False
    """`true`: a planned switch waits until the ReplicationTasks copying from the producers' member to the
    new one have nothing left to copy (their lag in status is 0 events), so that nothing is left behind;
    after `plannedTimeoutSeconds` it switches anyway and says what it leaves (status `lastSwitchLoss`,
    Event `SwitchLoss`). `false`: switches at once (forced), recording the estimated loss the same way.
    An automatic failover is always forced. Default: false."""
    planned_timeout_seconds: Annotated[int, Field(ge=0, le=86400)] = 300
    """How long a planned switch waits for the replication to catch up. Default: 300."""


class FailoverGroupSpec(FedModel):
    """Desired state of a FailoverGroup."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "self.members.exists(m, m.name == self.primaryMember)",
                "primaryMember must name a member",
                ".primaryMember",
            ),
            (
                "!has(self.activeMember) || self.members.exists(m, m.name == self.activeMember)",
                "activeMember must name a member",
                ".activeMember",
            ),
            (
                "has(self.probe.entity) || self.failback.drainEntities.size() > 0",
                "set probe.entity (or failback.drainEntities): the entity the health probe reads",
                ".probe",
            ),
        )
    )

    mode: Literal["manual", "automatic"] = "manual"
    """`manual`: only `activeMember` switches. `automatic`: `failureThreshold` consecutive probe failures
    of the active member switch to the next healthy member (the primary first); failing back stays a
    deliberate act (a new `switchRequest`). Default: manual."""
    primary_member: DnsLabel
    """The preferred member; failback returns to it."""
    active_member: DnsLabel | None = None
    """The member producers and consumers should use (desired state). Default: `primaryMember`. Manual
    mode keeps the group on it. In automatic mode an automatic failover overrides the request in force
    (this field with `switchRequest`) until a new one is made: a new `switchRequest` value, or another
    member here. Switching to the primary moves producers first and consumers once the member they leave
    is drained."""
    switch_request: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    """Names the request for `activeMember`: any value, new for each request (`kubectl federator failover`
    writes the time). The same value again requests nothing, so Git can hold it; a new one asks for
    `activeMember` again, e.g. the failback after an automatic failover while `activeMember` already names
    the primary. The operator records the value it acted on in `status.switchRequest`."""
    members: Annotated[
        list[FailoverMember], Field(min_length=2, max_length=8, json_schema_extra=list_map("name"))
    ]
    """The namespaces of the group."""
    probe: Probe = Probe()
    """Health probe settings."""
    failback: Failback = Failback()
    """Failback sequencing."""
    publishing: Publishing = Publishing()
    """Where the active endpoints are published."""
    switching: Switching = Switching()
    """Planned or forced switches."""


class ProbeResult(StatusModel):
    """The latest probe of one member."""

    member: str
    """Member name."""
    healthy: bool
    """Whether the last probe succeeded."""
    consecutive_failures: Annotated[int, Field(ge=0)] = 0
    """Failures in a row."""
    last_probe_time: datetime | None = None
    """When the member was last probed."""
    message: str = ""
    """Error of the last failed probe."""
    failing_since: datetime | None = None
    """When the first of `consecutiveFailures` was probed (when a failure was detected)."""


class PendingSwitch(StatusModel):
    """A planned switch not made yet."""

    member: str
    """The member asked for."""
    since: datetime
    """When the switch was asked for (it is forced `plannedTimeoutSeconds` later)."""


class SwitchLoss(StatusModel):
    """The estimated loss of a switch: events not replicated yet to the member switched to."""

    member: str
    """The member switched to."""
    time: datetime
    """When."""
    events_behind: Annotated[int, Field(ge=0)] | None = None
    """Events at the member left that were not copied yet (unset: unknown)."""
    rpo_seconds: Annotated[float, Field(ge=0)] | None = None
    """Their enqueue-time span."""
    tasks: Annotated[list[str], Field(max_length=64)] = []
    """The ReplicationTasks that were behind."""
    measured_at: datetime | None = None
    """When their lag was measured (the oldest of the tasks'): events enqueued since are not in the
    estimate."""


class FollowerFlowing(StatusModel):
    """A ReplicationTask whose source follows the group, after a switch."""

    task: str
    """The task."""
    flowing_seconds: Annotated[float, Field(ge=0)] | None = None
    """From the decision to the task's first batch read from the member switched to, as its status
    reports it (`activeSourceMember` and the earliest `lastBatchTime` seen after the switch); unset while it
    does not flow there yet."""


class SwitchRecord(StatusModel):
    """One switch and how long each phase took: detected → decided → endpoints published → each follower
    flowing on the new member."""

    source: str | None = None
    """The member left."""
    target: str
    """The member switched to."""
    roles: Literal["producers", "consumers", "both"]
    """Who moved."""
    cause: str
    """`failover`, `requested` (forced), `planned`, `plannedTimeout`, `drained`, `drainTimeout`,
    `memberRemoved`."""
    detected: datetime
    """When the need was seen: the first of the failed probes (failover), or the round that saw the
    request."""
    decided: datetime
    """When the operator switched."""
    decided_seconds: Annotated[float, Field(ge=0)]
    """Detected → decided (a planned switch's wait for the replication included)."""
    published_seconds: Annotated[float, Field(ge=0)] | None = None
    """Decided → endpoints published (ConfigMap, and DNS records when configured)."""
    followers: Annotated[list[FollowerFlowing], Field(max_length=64)] = []
    """Tasks whose source follows the group, and when each flowed on the new member."""
    events_left_behind: Annotated[int, Field(ge=0)] | None = None
    """The estimate at the switch of the events at the member left not copied yet to the new one (forced
    switches): the tasks' lag as last measured, counted from what they had read (unset: none known)."""
    rpo_seconds: Annotated[float, Field(ge=0)] | None = None
    """Their enqueue-time span (counted from the tasks' last committed batch: at most this)."""
    left_behind_measured_at: datetime | None = None
    """When the estimate was measured: events enqueued on the member left after it are not in it."""
    loss_tasks: Annotated[list[str], Field(max_length=64)] = []
    """The ReplicationTasks copying from the member left to the new one at the switch, whose count
    confirms the estimate."""
    events_left_behind_confirmed: Annotated[int, Field(ge=0)] | None = None
    """The count, once the member left answered again after the outage the switch fled: the events it
    held that `lossTasks` had not copied to the new member before it came back (Event
    `SwitchLossConfirmed`). They are copied late, but for `eventsLost`. Unset: not confirmed (yet)."""
    events_lost: Annotated[int, Field(ge=0)] | None = None
    """Of `eventsLeftBehindConfirmed`, those the member left no longer holds (its retention removed
    them): never copied."""
    confirmed_rpo_seconds: Annotated[float, Field(ge=0)] | None = None
    """The enqueue-time span of the events confirmed left behind (unset: not known)."""
    confirmed_at: datetime | None = None
    """When the member left answered again (the latest of the tasks')."""
    complete: bool = False
    """Measured to the end: every follower flows, or the wait for them ended (Event `SwitchMeasured`)."""


class MemberReplication(StatusModel):
    """What the ReplicationTasks copying from the producers' member to one other member have left."""

    member: str
    """The member copied to."""
    tasks: Annotated[list[str], Field(max_length=64)] = []
    """ReplicationTasks copying to it from the producers' member."""
    events_behind: Annotated[int, Field(ge=0)] | None = None
    """Events not copied yet (unset: a task has not measured its lag yet)."""
    rpo_seconds: Annotated[float, Field(ge=0)] | None = None
    """What a failover to this member now would leave behind, in seconds of enqueue time."""


class DrainingTask(StatusModel):
    """A ReplicationTask following the group from an event hub that has not replicated what producers
    left on the consumers' member."""

    namespace: str
    """The task's namespace."""
    name: str
    """The task's name."""
    member: str
    """The member it reads and has not drained (the consumers' member)."""
    lag_measured: bool = True
    """Whether its lag on `member` was measured at least 2 s after producers left it (a lag measured
    before is no proof: events came after it, sends begun before the switch among them)."""
    events_behind: Annotated[int, Field(ge=0)] | None = None
    """Events on `member` it has not replicated yet (unset: not measured since producers left, or how
    far not known)."""


class DrainHold(StatusModel):
    """What keeps the consumers' member from being drained while failing back: a drain entity that still
    holds messages (`entity`), or a ReplicationTask that has not replicated what producers left there
    (`task`); neither: a kind a newer operator knows. An operator before this field was typed wrote each
    as a string (an entity's name, or the task's words): such an entry is read into this shape."""

    entity: str | None = None
    """A drain entity (`spec.failback.drainEntities`) that still held a message at the last probe."""
    task: DrainingTask | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_an_older_operator(cls, value: Any) -> Any:
        return _drain_hold_of_words(value) if isinstance(value, str) else value


# The words older operators wrote for a task (session 44: "task ns/name still 37 behind on neu", "... still
# behind on neu (how far not known)", "task ns/name: its lag on neu not measured since producers left";
# before it: "ReplicationTask ns/name: 37 events on neu not replicated yet").
_TASK_WORDS = re.compile(r"^(?:task|ReplicationTask) (?P<namespace>[^/ ]+)/(?P<name>[^ :]+):? (?P<rest>.*)$")
_BEHIND = re.compile(r"(?:still (?P<still>\d+) behind|(?P<events>\d+) events) on ")
_MEMBER = re.compile(r" on (?P<member>[^ ]+)")


def _drain_hold_of_words(entry: str) -> dict[str, Any]:
    if " " not in entry:
        return {"entity": entry}
    words, member = _TASK_WORDS.match(entry), _MEMBER.search(entry)
    if words is None or member is None:
        raise ValueError(f"drainPending entry {entry!r}: neither an entity's name nor a task's words")
    behind = _BEHIND.search(words["rest"])
    count = behind["still"] or behind["events"] if behind else None
    task = {"namespace": words["namespace"], "name": words["name"], "member": member["member"]}
    measured = "not measured since producers left" not in words["rest"]
    return {"task": {**task, "lagMeasured": measured, "eventsBehind": int(count) if count else None}}


class FailoverGroupStatus(ObjectStatus):
    """Observed state of a FailoverGroup. Written by the operator only."""

    conditions: Annotated[list[Condition], Field(max_length=16, json_schema_extra=list_map("type"))] = []
    """`Ready`, `Reconciling`, `Stalled`, `FailedOver`."""
    phase: Literal["Normal", "FailedOver", "FailingBack"] | None = None
    """`Normal` (on the primary), `FailedOver` (on a secondary) or `FailingBack` (producers back on the
    primary, consumers draining the secondary)."""
    producer_member: str | None = None
    """Member producers use now."""
    consumer_member: str | None = None
    """Member consumers use now."""
    last_transition_time: datetime | None = None
    """When producers or consumers last switched."""
    producer_since: datetime | None = None
    """When producers moved to `producerMember`."""
    consumer_since: datetime | None = None
    """When consumers moved to `consumerMember` (ReplicationTasks that follow the group resume from it)."""
    requested_member: str | None = None
    """The value of `spec.activeMember` the operator last acted on (empty when unset)."""
    switch_request: str | None = None
    """The value of `spec.switchRequest` the operator last acted on (empty when unset): a request is
    new when this or `requestedMember` differs from the spec."""
    drain_pending: Annotated[list[DrainHold], Field(max_length=64)] = []
    """While failing back: what keeps the consumers' member from being drained: drain entities that still
    hold messages, and ReplicationTasks following the group from an event hub that have not replicated
    what producers left there (their lag on it, measured after the producers left)."""
    probes: Annotated[list[ProbeResult], Field(max_length=8)] = []
    """Latest probe per member."""
    pending_switch: PendingSwitch | None = None
    """A planned switch waiting for the replication to the new member to catch up."""
    last_switch_loss: SwitchLoss | None = None
    """What the last switch left behind, estimated from the lag of the ReplicationTasks copying to the new
    member (none when it left nothing)."""
    switches: Annotated[list[SwitchRecord], Field(max_length=5)] = []
    """The last switches, oldest first, with how long each phase took."""
    replication: Annotated[
        list[MemberReplication], Field(max_length=8, json_schema_extra=list_map("member"))
    ] = []
    """Per member other than the producers' one: what the ReplicationTasks copying to it have left to copy
    (the `LosslessFailover` condition sums it up)."""
