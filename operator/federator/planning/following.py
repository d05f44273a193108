"""ReplicationTasks that follow a FailoverGroup: every `failoverGroupRef` connection becomes the connection of
the member the group publishes — the consumers' member for the source (a task reads like a consumer),
the producers' member for targets. Pure: the groups are passed in as read from the API.

The task config then carries, for a following source, `following: {group, member, switchedAt,
skewSeconds}`: after a switch the replication app resumes on the new member from the last replicated
event's source enqueue time minus `skewSeconds`, skipping what it already handled by the propagated
`repl-*` metadata (docs/patterns/failover.md). In a cluster such a task runs in a host of its own
(planning/follower.py): a switch changes its task config only, and only its query restarts on the new
member; `annotations` name the followed members for a Spark application that reads a mounted config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter

from federator import reasons
from federator.planning.errors import PlanningError
from federator.planning.secrets import SecretBinding, secret_bindings
from federator_contract.api.base import EndpointConnection, FailoverGroupReference
from federator_contract.api.connections import ConnectionSite, connections, with_connection
from federator_contract.api.failovergroup import FailoverGroupStatus, FailoverMember
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import FollowingSource

ANNOTATION = "federator.io/following"
# The task config carries times as the API does (RFC 3339, `Z` for UTC).
_TIME = TypeAdapter(datetime)


@dataclass(frozen=True)
class Following:
    """The spec with concrete connections, and what the task follows."""

    spec: ReplicationTaskSpec
    source: FollowingSource | None = None
    """When the source follows a group: which member it reads, and how it resumes after a switch."""
    members: dict[str, str] = field(default_factory=dict)
    """Spec path of each following endpoint (e.g. `spec.targets[0].eventHub`) → `group/member` it uses now."""
    member_secrets: tuple[SecretBinding, ...] = ()
    """Every Secret key a member of the followed groups connects with, whichever member is used now: pods
    that carry them all need no change when a group switches."""

    @property
    def source_member(self) -> str | None:
        return self.source.member if self.source else None

    @property
    def annotations(self) -> dict[str, str]:
        """For the Spark application: changes whenever a followed member does, so the app restarts."""
        if not self.members:
            return {}
        return {ANNOTATION: ",".join(f"{path}={member}" for path, member in sorted(self.members.items()))}


def followed_groups(spec: ReplicationTaskSpec) -> list[str]:
    """Names of the FailoverGroups the task follows, each once."""
    return sorted({ref.name for _, ref in _references(spec)})


def resolve_following(spec: ReplicationTaskSpec, groups: Mapping[str, Mapping[str, Any] | None]) -> Following:
    """`groups` maps each followed group's name to the object as read (None: it does not exist). Raises
    PlanningError: FailoverGroupNotFound, or FailoverGroupPending while a group has chosen no members."""
    references = _references(spec)
    if not references:
        return Following(spec)
    source: FollowingSource | None = None
    members: dict[str, str] = {}
    standby: set[SecretBinding] = set()
    resolved = spec
    for site, ref in references:
        group = groups.get(ref.name)
        if group is None:
            raise PlanningError(
                reasons.FAILOVER_GROUP_NOT_FOUND,
                f"{_endpoint(site)} follows FailoverGroup {ref.name}, which does not exist in this namespace",
            )
        status = FailoverGroupStatus.model_validate(group.get("status") or {})
        standby.update(b for m in _members(group) for b in secret_bindings(m.connection))
        reads = site.role == "source"  # a task reads like a consumer, writes like a producer
        member = _member(group, status.consumer_member if reads else status.producer_member)
        if member is None:
            chosen = "consumers'" if reads else "producers'"
            raise PlanningError(
                reasons.FAILOVER_GROUP_PENDING,
                f"{_endpoint(site)} follows FailoverGroup {ref.name}, which has not published its {chosen} "
                "member yet",
            )
        # Through the fields' values, so that a kind of connection only a member may have fails loudly.
        concrete = EndpointConnection.model_validate(member.connection.model_dump(exclude_none=True))
        resolved = with_connection(resolved, site.steps, concrete)
        members[_endpoint(site)] = f"{ref.name}/{member.name}"
        if reads:
            since = status.consumer_since
            source = FollowingSource(
                group=ref.name,
                member=member.name,
                switched_at=_TIME.dump_python(since, mode="json") if since is not None else None,
                skew_seconds=ref.resume_skew_seconds,
            )
    return Following(resolved, source, members, tuple(sorted(standby)))


def _member(group: Mapping[str, Any], chosen: str | None) -> FailoverMember | None:
    """The member named ``chosen`` of the group's spec (only the members are read: the rest of a group's
    spec is its controller's business)."""
    if chosen is None:
        return None
    return next((m for m in _members(group) if m.name == chosen), None)


def _members(group: Mapping[str, Any]) -> list[FailoverMember]:
    """The members of the group's spec."""
    return [FailoverMember.model_validate(m) for m in (group.get("spec") or {}).get("members") or []]


def _endpoint(site: ConnectionSite) -> str:
    """The endpoint that follows, e.g. `spec.source.serviceBus` (the key of `Following.members`)."""
    return site.field_path.rpartition(".")[0]


def _references(spec: ReplicationTaskSpec) -> list[tuple[ConnectionSite, FailoverGroupReference]]:
    """Every following connection of ``spec`` with the group it follows."""
    return [(site, site.followed_group) for site in connections(spec) if site.followed_group is not None]
