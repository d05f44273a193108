"""Verdicts about children as stored, remembered until the child or the plan changes: an observe pass over
a thousand unchanged children must not walk each one's managedFields again (apply/children.py `drifted`,
about 0.1 ms a child on an idle machine, every pass).

A stored object is identified by its uid and resourceVersion: the API server gives every change a new
version, so a verdict about that version holds as long as the plan it was judged against is the same. The
plan is compared by identity first (the reconcilers keep a task's rendered children between passes), then
by value (a generated plan renders fresh dicts; comparing them costs microseconds, less than hashing them).
Plans handed in are kept by reference: never modify one after it was judged.

What Federator's own apply returned needs no walk at all: server-side apply is idempotent, so applying the
same plan again to the object it returned changes nothing, and no judge of drift can find otherwise
(`applied`, kept by kube/client.py). The first pass after a child was written — at a fleet's creation, every
task's first observe pass — then walks nothing either.

One entry per child, replaced when it changes; a child's watched copy forgets it when the child is deleted
(kube/children.py), and a capacity bounds what reads outside the watches leave behind."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Judge = Callable[[dict[str, Any], dict[str, Any]], bool]
"""Whether applying `desired` would change `stored` (apply/children.py `drifted`): a verdict on (desired,
stored) that depends on nothing else."""

CAPACITY = 100_000
"""Children remembered at most, far above a fleet's (1,000 tasks have 2,000). Past it, the least recently
judged are walked again: slower, never wrong."""


@dataclass(frozen=True)
class _Verdict:
    version: str
    judge: Judge | None
    """None: the version an apply of `desired` returned, not drifted for any judge."""
    desired: dict[str, Any]
    verdict: bool


class Verdicts:
    """Verdicts by child uid, least recently used first."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._seen: OrderedDict[str, _Verdict] = OrderedDict()

    def judged(self, judge: Judge, desired: dict[str, Any], stored: dict[str, Any]) -> bool:
        """`judge(desired, stored)`, asked only when this version of `stored` was not judged against an
        equal `desired` by the same judge before. Objects without uid or resourceVersion (not from an API
        server) are judged every time."""
        uid, version = _identity(stored)
        if not uid or not version:
            return judge(desired, stored)
        seen = self._seen.get(uid)
        if seen is not None and _same(seen, version, judge, desired):
            self._seen.move_to_end(uid)
            return seen.verdict
        verdict = judge(desired, stored)
        self._keep(uid, _Verdict(version, judge, desired, verdict))
        return verdict

    def applied(self, desired: dict[str, Any], stored: dict[str, Any]) -> None:
        """`stored` is what the API server returned for an apply of `desired`: not drifted from it."""
        uid, version = _identity(stored)
        if uid and version:
            self._keep(uid, _Verdict(version, None, desired, False))

    def _keep(self, uid: str, verdict: _Verdict) -> None:
        self._seen[uid] = verdict
        self._seen.move_to_end(uid)
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)

    def forget(self, uid: str) -> None:
        """The child is gone."""
        self._seen.pop(uid, None)

    def __contains__(self, uid: object) -> bool:
        return uid in self._seen

    def __len__(self) -> int:
        return len(self._seen)


def _identity(stored: dict[str, Any]) -> tuple[str, str]:
    meta = stored.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")


def _same(seen: _Verdict, version: str, judge: Judge, desired: dict[str, Any]) -> bool:
    same_plan = seen.desired is desired or seen.desired == desired
    return seen.version == version and seen.judge in (judge, None) and same_plan


VERDICTS = Verdicts()
"""The process's verdicts. Shared by every client and watch: a (uid, resourceVersion) pair names one
content wherever it was read, so a verdict about it is true for every reader."""
