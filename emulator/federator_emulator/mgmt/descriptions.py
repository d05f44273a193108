"""ATOM descriptions of queues, topics and subscriptions as Service Bus writes them.

Azure returns every property of a description, in the order of its data contract, whether or not the
entity's creator set it; the JS ``ServiceBusAdministrationClient`` refuses a description without, say,
``MaxSizeInMegabytes`` or ``EnableExpress``. Properties the emulator does not model carry the values
an Azure Standard namespace reports for an entity that never set them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from federator_emulator.mgmt.atomxml import SB, XSI, now_text, xml_text
from federator_emulator.mgmt.durations import MAX_TIMESPAN
from federator_emulator.mgmt.entities import Counts, QueueView, SubscriptionView, TopicView
from federator_emulator.mgmt.mapping import properties_of

SB_COUNTS = "http://schemas.microsoft.com/netservices/2011/06/servicebus"

_COUNT_DETAILS = "CountDetails"  # placed in the order like any other element, rendered apart


def _order(*runs: str) -> tuple[str, ...]:
    return tuple(name for run in runs for name in run.split())


# Element order of each description (Azure.Messaging.ServiceBus's Administration *PropertiesExtensions).
_LIFETIME = "Status UserMetadata CreatedAt UpdatedAt AccessedAt"
_QUEUE = _order(
    "LockDuration MaxSizeInMegabytes RequiresDuplicateDetection RequiresSession DefaultMessageTimeToLive",
    "DeadLetteringOnMessageExpiration DuplicateDetectionHistoryTimeWindow MaxDeliveryCount",
    "EnableBatchedOperations SizeInBytes MessageCount IsAnonymousAccessible AuthorizationRules",
    _LIFETIME,
    "SupportOrdering CountDetails AutoDeleteOnIdle EnablePartitioning EntityAvailabilityStatus EnableExpress",
)
_TOPIC = _order(
    "DefaultMessageTimeToLive MaxSizeInMegabytes RequiresDuplicateDetection",
    "DuplicateDetectionHistoryTimeWindow EnableBatchedOperations SizeInBytes",
    "FilteringMessagesBeforePublishing IsAnonymousAccessible AuthorizationRules",
    _LIFETIME,
    "SupportOrdering CountDetails SubscriptionCount AutoDeleteOnIdle EnablePartitioning IsExpress",
    "EntityAvailabilityStatus EnableExpress",
)
_SUBSCRIPTION = _order(
    "LockDuration RequiresSession DefaultMessageTimeToLive DeadLetteringOnMessageExpiration",
    "DeadLetteringOnFilterEvaluationExceptions MessageCount MaxDeliveryCount EnableBatchedOperations",
    _LIFETIME,
    "CountDetails AutoDeleteOnIdle EntityAvailabilityStatus",
)

# What Azure reports for the properties the emulator has no setting for.
_FIXED: dict[str, Any] = {
    "MaxSizeInMegabytes": 1024,
    "EnableBatchedOperations": True,
    "IsAnonymousAccessible": False,
    "AuthorizationRules": "",
    "Status": "Active",
    "SupportOrdering": True,
    "AutoDeleteOnIdle": MAX_TIMESPAN,
    "EnablePartitioning": False,
    "EntityAvailabilityStatus": "Available",
    "EnableExpress": False,
    "FilteringMessagesBeforePublishing": False,
    "IsExpress": False,
    "DeadLetteringOnFilterEvaluationExceptions": True,
}


def _count_details(counts: Counts) -> str:
    details = {
        "ActiveMessageCount": counts.active,
        "DeadLetterMessageCount": counts.dead_letter,
        "ScheduledMessageCount": counts.scheduled,
        "TransferMessageCount": 0,
        "TransferDeadLetterMessageCount": 0,
    }
    inner = "".join(f"<d2p1:{k}>{v}</d2p1:{k}>" for k, v in details.items())
    return f'<CountDetails xmlns:d2p1="{SB_COUNTS}">{inner}</CountDetails>'


def _description(
    kind: str, order: tuple[str, ...], config: BaseModel, counts: Counts, extra: dict[str, Any]
) -> str:
    now = now_text()
    configured = {name[0].upper() + name[1:]: value for name, value in properties_of(config).items()}
    values = {**_FIXED, "CreatedAt": now, "UpdatedAt": now, "AccessedAt": now, **extra, **configured}
    body = ""
    for name in order:
        if name == _COUNT_DETAILS:
            body += _count_details(counts)
        elif values.get(name) is not None:
            body += f"<{name}>{xml_text(values[name])}</{name}>"
    return f'<{kind} xmlns="{SB}" xmlns:i="{XSI}">{body}</{kind}>'


def queue(view: QueueView) -> str:
    extra = {"MessageCount": view.counts.total, "SizeInBytes": view.counts.size_bytes}
    return _description("QueueDescription", _QUEUE, view.config, view.counts, extra)


def topic(view: TopicView) -> str:
    extra = {"SizeInBytes": view.counts.size_bytes, "SubscriptionCount": view.subscription_count}
    return _description("TopicDescription", _TOPIC, view.config, view.counts, extra)


def subscription(view: SubscriptionView) -> str:
    extra = {"MessageCount": view.counts.total}
    return _description("SubscriptionDescription", _SUBSCRIPTION, view.config, view.counts, extra)
