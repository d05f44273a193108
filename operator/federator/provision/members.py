"""Provisioning one member of a mirror: open its management API (ARM or data plane, as the member's
`management` says), observe what the mirror cares about, diff, write, and report an outcome. Deleting the
mirror runs the same loop with nothing desired, so exactly what the mirror owns goes away."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from azure.core.exceptions import ResourceNotFoundError

from federator import reasons
from federator.planning.mirror import RulePlan
from federator.provision.arm import ArmManagement
from federator.provision.dataplane import DataPlaneManagement
from federator.provision.diff import Diff, diff, targets
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError, classify, summary
from federator.provision.login import arm_login
from federator.provision.model import (
    Desired,
    Observed,
    ObservedQueue,
    ObservedSubscription,
    Operation,
    queue_path,
    subscription_path,
)
from federator.provision.secrets import SecretSource, secret_values
from federator_contract.api.servicebusmirror import MirrorMember

State = Literal["Pending", "Provisioned", "Failed"]


class NamespaceManagement(Protocol):
    """What provisioning needs from a management API (ArmManagement, DataPlaneManagement)."""

    where: str

    async def subscriptions(self, topic: str) -> list[tuple[str, str | None]]: ...
    async def rules(self, topic: str, subscription: str) -> tuple[RulePlan, ...]: ...
    async def queue(self, name: str) -> ObservedQueue | None: ...
    async def apply(self, op: Operation) -> None: ...
    async def close(self) -> None: ...


@dataclass(frozen=True)
class MemberOutcome:
    name: str
    state: State
    reason: str = ""
    message: str = ""
    transient: bool = False
    """A failure that passes by itself (Reconciling) rather than one that needs a human (Stalled)."""
    entities: tuple[str, ...] = ()
    done: tuple[str, ...] = ()
    """What this pass wrote, in words."""
    drift: tuple[str, ...] = ()
    """Changes made by hand that this pass repaired, in words."""

    def status(self) -> dict[str, Any]:
        """The `status.members[]` entry."""
        return {
            "name": self.name,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "entities": list(self.entities),
        }

    @classmethod
    def from_status(cls, raw: dict[str, Any]) -> MemberOutcome:
        """The outcome a previous pass recorded (when this pass does not re-read the member)."""
        return cls(
            name=str(raw.get("name", "")),
            state=raw.get("state", "Pending"),
            reason=str(raw.get("reason", "")),
            message=str(raw.get("message", "")),
            transient=raw.get("reason") == reasons.MANAGEMENT_UNAVAILABLE,
            entities=tuple(raw.get("entities") or ()),
        )


async def provision_member(
    kube: SecretSource,
    namespace: str,
    member: MirrorMember,
    desired: Desired,
    recorded: Iterable[str],
    env: ManagementEnvironment,
) -> MemberOutcome:
    """Bring the member to `desired`; never touches entities without the mirror's marker."""
    recorded = tuple(recorded)
    try:
        management = await open_management(kube, namespace, member, env)
    except ManagementError as err:
        return _failed(member.name, err, recorded)
    try:
        return await _converge(management, member.name, desired, recorded)
    finally:
        await management.close()


async def deprovision_member(
    kube: SecretSource,
    namespace: str,
    member: MirrorMember,
    desired: Desired,
    recorded: Iterable[str],
    env: ManagementEnvironment,
) -> MemberOutcome:
    """Delete what the mirror owns on the member: what status recorded and what `desired` names (in case
    status was lost). Entities without the marker stay."""
    scan = [*recorded, *(subscription_path(s.topic, s.name) for s in desired.subscriptions)]
    scan += [queue_path(q.name) for q in desired.queues]
    return await provision_member(kube, namespace, member, Desired(desired.marker), scan, env)


async def open_management(
    kube: SecretSource, namespace: str, member: MirrorMember, env: ManagementEnvironment
) -> NamespaceManagement:
    """The member's management API, with its credential read from the cluster."""
    management, connection = member.management, member.connection
    if management is not None and management.arm is not None:
        arm = management.arm
        where = f"member {member.name}: management.arm.credential"
        credential = await arm_login(kube, namespace, arm.credential, arm.subscription_id, env, where)
        return ArmManagement.open(credential, arm, env)
    if connection.emulator is not None:
        connection_string = env.emulator_management.get(connection.emulator.namespace)
        if connection_string is None:
            raise ManagementError(
                reasons.EMULATOR_ONLY_IN_LOCAL_MODE,
                f"member {member.name} is the built-in emulator's namespace "
                f"{connection.emulator.namespace!r}, which only exists with `federator run`; use secretRef or"
                " workloadIdentity, and management",
            )
        return DataPlaneManagement.open(
            connection_string, env, f"emulator namespace {connection.emulator.namespace}"
        )
    if management is not None and connection.secret_ref is not None:
        ref = connection.secret_ref
        values = await secret_values(kube, namespace, ref.name, (ref.key,))
        return DataPlaneManagement.open(
            values[ref.key], env, f"Secret {namespace}/{ref.name} key {ref.key!r}"
        )
    raise ManagementError(
        reasons.INVALID_SPEC,
        f"member {member.name}: set management.arm, or management.dataPlane with connection.secretRef",
    )


async def observe(management: NamespaceManagement, desired: Desired, recorded: Iterable[str]) -> Observed:
    """The member's entities that the mirror plans, owns or recorded; rules only of those subscriptions."""
    topics, queues = targets(desired, recorded)
    planned = {(s.topic.casefold(), s.name.casefold()) for s in desired.subscriptions}
    observed = Observed()
    for topic in topics:
        try:
            listed = await management.subscriptions(topic)
        except ResourceNotFoundError as err:
            observed.topics[topic] = None
            observed.not_found[topic] = summary(err)
            continue
        found = []
        for name, metadata in listed:
            interesting = metadata == desired.marker or (topic.casefold(), name.casefold()) in planned
            rules = await management.rules(topic, name) if interesting else None
            found.append(ObservedSubscription(name, metadata, rules))
        observed.topics[topic] = tuple(found)
    for queue in queues:
        observed.queues[queue] = await management.queue(queue)
    return observed


async def _converge(
    management: NamespaceManagement, member: str, desired: Desired, recorded: tuple[str, ...]
) -> MemberOutcome:
    try:
        observed = await observe(management, desired, recorded)
    except Exception as err:  # classify re-raises what is not an Azure or network failure
        return _failed(member, classify(err, f"member {member}: reading {management.where}"), recorded)
    changes = diff(desired, observed, recorded)
    done: list[str] = []
    for op in changes.operations:
        try:
            await management.apply(op)
        except Exception as err:
            doing = f"member {member}: cannot {op.describe(done=False)} in {management.where}"
            owned = sorted({*recorded, *changes.entities})  # deletion double-checks the marker anyway
            return _failed(member, classify(err, doing), owned, done)
        done.append(op.describe())
    problem = _problem(member, management.where, changes, desired.marker, observed)
    if problem is not None:
        return _failed(member, problem, changes.entities, done)
    return MemberOutcome(
        member,
        "Provisioned",
        reasons.PROVISIONED,
        "",
        False,
        tuple(changes.entities),
        tuple(done),
        tuple(changes.drift),
    )


def _problem(
    member: str, where: str, changes: Diff, marker: str, observed: Observed
) -> ManagementError | None:
    if changes.missing_topics:
        topics = sorted(set(changes.missing_topics))
        said = "".join(f" [{observed.not_found[t]}]" for t in topics if t in observed.not_found)
        return ManagementError(
            reasons.ENTITY_NOT_FOUND,
            f"member {member}: topic {', '.join(topics)} does not exist in {where}{said}; the mirror does"
            " not create the mirrored topic: create it on every member",
        )
    if changes.not_owned:
        return ManagementError(
            reasons.ENTITY_NOT_OWNED,
            f"member {member}: {', '.join(changes.not_owned)} in {where} exists and was not created by this"
            f" mirror (its user metadata is not {marker!r}); Federator leaves it alone: delete or rename it",
        )
    return None


def _failed(
    member: str, err: ManagementError, entities: Iterable[str], done: Iterable[str] = ()
) -> MemberOutcome:
    return MemberOutcome(
        member, "Failed", err.reason, err.message, err.retryable, tuple(entities), tuple(done)
    )
