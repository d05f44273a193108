"""Which ReplicationTasks follow which FailoverGroup, so that a group's switch wakes its followers at once.

kopf keeps the index from the tasks' watch stream (no API request per switch); a group's daemon, once it has
written a switch to its status, sets the wake-up event of every task the index names, and each one's
observe daemon runs its pass now instead of at the end of its interval. The pass reads the group afresh and
plans onto the new member. Nothing is written to the tasks to wake them, and a wake only shortens the wait:
a wake that is missed (an operator restart, a task not indexed yet) is caught by the next observe pass."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import kopf
from pydantic import ValidationError

from federator.handlers.context import ObjectRegistry, ObjectState, OperatorContext
from federator.planning.following import followed_groups
from federator_contract.api.base import GROUP, VERSION, EndpointConnection
from federator_contract.api.replicationtask import ReplicationTaskSpec

Followed = tuple[str, str]
"""(namespace, FailoverGroup name): a key of the index."""


# Async although it awaits nothing: kopf runs a plain function in its thread pool, and a hand-off per watch
# event of every task (each status write is one) cost more than the work itself.
@kopf.index(GROUP, VERSION, "replicationtasks")
async def followers(
    namespace: str | None, uid: str | None, spec: kopf.Spec, meta: kopf.Meta, memo: OperatorContext, **_: Any
) -> dict[Followed, str] | None:
    """Each group the task follows → the task's uid (the key of its state in the operator's registry)."""
    if namespace is None or uid is None:
        return None
    return {(namespace, group): uid for group in followed_at(memo.objects.known(uid), meta, spec)} or None


def followed_at(state: ObjectState | None, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    """`followed_in(spec)`, kept in the task's state for its generation: the spec changes only with it."""
    generation = meta.get("generation")
    if state is not None and state.followed is not None and state.followed[0] == generation:
        return state.followed[1]
    found = followed_in(spec)
    if state is not None and isinstance(generation, int):
        state.followed = (generation, found)
    return found


# How a following connection names its group: the field's alias or name (the models accept both).
_FOLLOWS = frozenset({"failover_group_ref", EndpointConnection.model_fields["failover_group_ref"].alias})


def followed_in(spec: Mapping[str, Any]) -> list[str]:
    """The groups a task's spec follows; none for a spec that does not validate (it cannot run until it is
    fixed, and the edit that fixes it indexes it again). A spec that names no group anywhere follows none,
    known without validating it: kopf indexes each watch event, before a pass has made the state that
    keeps the answer (at creation several per task)."""
    if not _names_a_group(spec):
        return []
    try:
        model = ReplicationTaskSpec.model_validate(dict(spec))
    except ValidationError:
        return []
    return followed_groups(model)


def _names_a_group(value: object) -> bool:
    if isinstance(value, Mapping):
        return any(key in _FOLLOWS or _names_a_group(item) for key, item in value.items())
    return isinstance(value, list) and any(_names_a_group(item) for item in value)


def wake_followers(
    objects: ObjectRegistry, index: Mapping[Followed, Iterable[str]], namespace: str, group: str
) -> int:
    """Wake every task following `namespace/group` whose daemon is running; returns how many were woken."""
    return objects.wake(index.get((namespace, group), ()))
