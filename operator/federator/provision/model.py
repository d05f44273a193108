"""What one member should have, what it has, and the writes between the two. Plain data: the diff is pure,
the appliers translate operations into calls of their management API.

Entities are named by paths relative to the namespace, as status records them:
`topics/<topic>/subscriptions/<name>` and `queues/<name>`."""

from __future__ import annotations

from dataclasses import dataclass, field

from federator.planning.mirror import MirrorPlan, QueuePlan, RulePlan, SubscriptionPlan

DEFAULT_RULE = "$Default"


def subscription_path(topic: str, name: str) -> str:
    return f"topics/{topic}/subscriptions/{name}"


def queue_path(name: str) -> str:
    return f"queues/{name}"


def parse_path(path: str) -> tuple[str, str] | tuple[str] | None:
    """(topic, subscription) or (queue,); None for anything else (ignored, never deleted)."""
    parts = path.split("/")
    if len(parts) == 4 and parts[0] == "topics" and parts[2] == "subscriptions" and all(parts):
        return parts[1], parts[3]
    if len(parts) == 2 and parts[0] == "queues" and parts[1]:
        return (parts[1],)
    return None


@dataclass(frozen=True)
class Desired:
    """One member's share of the plan, and the marker that says "created by this mirror"."""

    marker: str
    subscriptions: tuple[SubscriptionPlan, ...] = ()
    queues: tuple[QueuePlan, ...] = ()


def desired_by_member(plan: MirrorPlan, members: list[str]) -> dict[str, Desired]:
    """Each member's share of the plan (members with nothing planned still get their marker, so that what
    they owned before can be found and removed)."""
    markers = {s.owner_marker for s in plan.subscriptions} | {q.owner_marker for q in plan.queues}
    [marker] = markers  # one mirror, one marker
    return {
        member: Desired(
            marker,
            tuple(s for s in plan.subscriptions if s.member == member),
            tuple(q for q in plan.queues if q.member == member),
        )
        for member in members
    }


@dataclass(frozen=True)
class ObservedSubscription:
    name: str
    user_metadata: str | None
    rules: tuple[RulePlan, ...] | None = None
    """Read only for subscriptions the mirror plans or owns; None otherwise."""


@dataclass(frozen=True)
class ObservedQueue:
    name: str
    user_metadata: str | None


@dataclass
class Observed:
    """A member's entities, as far as the mirror looks: whole topics (None: the topic does not exist) and
    single queues (None: absent)."""

    topics: dict[str, tuple[ObservedSubscription, ...] | None] = field(default_factory=dict)
    queues: dict[str, ObservedQueue | None] = field(default_factory=dict)
    not_found: dict[str, str] = field(default_factory=dict)
    """Why a topic is None, as the management API said it (a missing topic, namespace or resource group)."""


@dataclass(frozen=True)
class CreateSubscription:
    topic: str
    name: str
    user_metadata: str

    def describe(self, done: bool = True) -> str:
        return f"{'created' if done else 'create'} subscription {self.name} on topic {self.topic}"


@dataclass(frozen=True)
class PutRule:
    topic: str
    subscription: str
    rule: RulePlan
    exists: bool

    def describe(self, done: bool = True) -> str:
        verb = ("restored" if done else "restore") if self.exists else ("created" if done else "create")
        return f"{verb} rule {self.rule.name} of {self.topic}/{self.subscription}"


@dataclass(frozen=True)
class DeleteRule:
    topic: str
    subscription: str
    name: str

    def describe(self, done: bool = True) -> str:
        return f"{'removed' if done else 'remove'} rule {self.name} from {self.topic}/{self.subscription}"


@dataclass(frozen=True)
class DeleteSubscription:
    topic: str
    name: str

    def describe(self, done: bool = True) -> str:
        return f"{'deleted' if done else 'delete'} subscription {self.name} from topic {self.topic}"


@dataclass(frozen=True)
class CreateQueue:
    name: str
    user_metadata: str

    def describe(self, done: bool = True) -> str:
        return f"{'created' if done else 'create'} queue {self.name}"


@dataclass(frozen=True)
class DeleteQueue:
    name: str

    def describe(self, done: bool = True) -> str:
        return f"{'deleted' if done else 'delete'} queue {self.name}"


Operation = CreateSubscription | PutRule | DeleteRule | DeleteSubscription | CreateQueue | DeleteQueue
