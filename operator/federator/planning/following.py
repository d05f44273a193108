"""ReplicationTasks that follow a FailoverGroup: every `failoverGroupRef` connection becomes the connection of
the member the group publishes — the consumers' member for the source (a task reads like a consumer),
the producers' member for targets. Pure: the groups are passed in as read from the API.

The task config then carries, for a following source, `following: {group, member, switchedAt,
skewSeconds}`: after a switch the replication app resumes on the new member from the last replicated
event's source enqueue time minus `skewSeconds`, skipping what it already handled by the propagated
`repl-*` metadata (docs/patterns/failover.md). A switch changes the task config and the Spark application
(an annotation names the followed members), so the application restarts on the new member.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from federator import reasons
from federator.planning.errors import PlanningError
from federator_contract.api.failovergroup import FailoverMember
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import FollowingSource

# Where connections sit in a task spec (camelCase, as stored): the source's, then every destination's.
_SOURCE_KINDS = ("eventHub", "serviceBus")
ANNOTATION = "federator.io/following"


@dataclass(frozen=True)
class Following:
    """The spec with concrete connections, and what the task follows."""

    spec: ReplicationTaskSpec
    source: FollowingSource | None = None
    """When the source follows a group: which member it reads, and how it resumes after a switch."""
    members: dict[str, str] = field(default_factory=dict)
    """Spec path of each following connection → `group/member` it uses now."""

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
    raw = spec.model_dump(by_alias=True, mode="json", exclude_none=True)
    return sorted({ref["name"] for _, _, ref in _references(raw)})


def resolve_following(spec: ReplicationTaskSpec, groups: Mapping[str, Mapping[str, Any] | None]) -> Following:
    """`groups` maps each followed group's name to the object as read (None: it does not exist). Raises
    PlanningError: FailoverGroupNotFound, or FailoverGroupPending while a group has chosen no members."""
    raw = spec.model_dump(by_alias=True, mode="json", exclude_none=True)
    references = list(_references(raw))
    if not references:
        return Following(spec)
    source: FollowingSource | None = None
    members: dict[str, str] = {}
    for path, holder, ref in references:
        group = groups.get(ref["name"])
        if group is None:
            raise PlanningError(
                reasons.FAILOVER_GROUP_NOT_FOUND,
                f"{path} follows FailoverGroup {ref['name']}, which does not exist in this namespace",
            )
        is_source = path.startswith("spec.source")
        role = "consumerMember" if is_source else "producerMember"
        status = group.get("status") or {}
        chosen = status.get(role)
        member = next(
            (
                FailoverMember.model_validate(m)
                for m in (group.get("spec") or {}).get("members") or []
                if m.get("name") == chosen
            ),
            None,
        )
        if member is None:
            raise PlanningError(
                reasons.FAILOVER_GROUP_PENDING,
                f"{path} follows FailoverGroup {ref['name']}, which has not published its {role} yet",
            )
        holder["connection"] = member.connection.model_dump(by_alias=True, mode="json", exclude_none=True)
        members[path] = f"{ref['name']}/{member.name}"
        if is_source:
            source = FollowingSource(
                group=ref["name"],
                member=member.name,
                switched_at=status.get("consumerSince"),
                skew_seconds=ref["resumeSkewSeconds"],  # the dump carries the API's default
            )
    return Following(ReplicationTaskSpec.model_validate(raw), source, members)


def _references(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(spec path, the dict holding `connection`, the `failoverGroupRef`) of every following connection."""
    holders: list[tuple[str, dict[str, Any]]] = []
    for kind in _SOURCE_KINDS:
        if kind in raw["source"]:
            holders.append((f"spec.source.{kind}", raw["source"][kind]))
    endpoints = [(f"spec.targets[{i}]", t) for i, t in enumerate(raw["targets"])]
    endpoints += [(f"spec.{key}", raw[key]) for key in ("unrouted", "deadLetter") if key in raw]
    for path, endpoint in endpoints:
        for kind in _SOURCE_KINDS:
            if kind in endpoint:
                holders.append((f"{path}.{kind}", endpoint[kind]))
    return [
        (path, holder, holder["connection"]["failoverGroupRef"])
        for path, holder in holders
        if "failoverGroupRef" in holder.get("connection", {})
    ]
