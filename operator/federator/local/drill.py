"""Pieces of a failover drill on a local run (`bench/failover.py`): the events sent and read back and
what the switches did to them, what a group publishes and records in the state dir, how long a forced
switch may take to be detected, and waiting for a condition."""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from federator.local.state import StateDir
from federator_contract.api.failovergroup import FailoverGroupStatus, Probe, SwitchRecord

T = TypeVar("T")


@dataclass(frozen=True)
class GroupFiles:
    """A FailoverGroup's files in a run's state dir (local/groups.py writes them)."""

    state: StateDir
    namespace: str
    name: str

    @property
    def endpoints_file(self) -> Path:
        return self.state.group_dir(self.namespace, self.name) / "endpoints.json"

    def endpoints(self) -> dict[str, Any] | None:
        """What the group publishes (None until it has)."""
        return read_json(self.endpoints_file)

    def status(self) -> FailoverGroupStatus | None:
        """The group's status, as the operator would write it (None before its first round)."""
        found = read_json(self.state.group_dir(self.namespace, self.name) / "status.json")
        return FailoverGroupStatus.model_validate(found) if found is not None else None

    def switches_to(self, member: str, after: float) -> list[SwitchRecord]:
        """The switch records (`status.switches[]`) to ``member`` decided at or after ``after`` (epoch
        seconds; status keeps whole seconds), oldest first: a failback has one for producers, then one
        for consumers."""
        status = self.status()
        return [
            record
            for record in (status.switches if status is not None else [])
            if record.target == member and record.decided.timestamp() >= int(after)
        ]

    def switch_to(self, member: str, after: float) -> SwitchRecord | None:
        """The last of ``switches_to``, None until there is one."""
        found = self.switches_to(member, after)
        return found[-1] if found else None


@dataclass(frozen=True)
class Sent:
    key: int
    number: int
    member: str
    at: float


@dataclass(frozen=True)
class Archived:
    key: int
    number: int
    member: str
    sent_at: float
    at: float


class Moved(Protocol):
    """A switch as `left_behind` needs it: the member switched to, and when replication flowed there."""

    @property
    def to(self) -> str: ...

    @property
    def flowing(self) -> float: ...


@dataclass(frozen=True)
class Damage:
    lost: int
    duplicated: int
    out_of_order: int


def damage(sent: Iterable[Sent], archived: Sequence[Archived]) -> Damage:
    """Lost: sent, never archived; duplicated: archived more than once; out of order: archived after an
    event of the same key sent later (in archive order)."""
    wanted = {(s.key, s.number) for s in sent}
    seen: dict[tuple[int, int], int] = defaultdict(int)
    highest: dict[int, int] = {}
    out_of_order = 0
    for event in archived:
        seen[(event.key, event.number)] += 1
        if event.number < highest.get(event.key, -1):
            out_of_order += 1
        highest[event.key] = max(event.number, highest.get(event.key, -1))
    return Damage(
        lost=len(wanted - set(seen)),
        duplicated=sum(count - 1 for count in seen.values() if count > 1),
        out_of_order=out_of_order,
    )


def left_behind(sent: Sequence[Sent], archived: Sequence[Archived], switches: Sequence[Moved]) -> list[int]:
    """Per switch: the events sent to the member it left (producers move a moment after the decision)
    and not archived when replication flowed on the new member (the query on the old one had stopped by
    then): replicated later, if the task comes back to that member."""
    first: dict[tuple[int, int], float] = {}
    for event in archived:
        first.setdefault((event.key, event.number), event.at)
    counts = []
    for switch in switches:
        never = float("inf")
        counts.append(
            sum(
                1
                for e in sent
                if e.member != switch.to
                and e.at < switch.flowing
                and first.get((e.key, e.number), never) > switch.flowing
            )
        )
    return counts


def detection_goal(probe: Probe) -> float:
    """Seconds a forced switch may take from the member's failure to the decision: the probes that must
    fail in a row, one period apart, and a second for the round itself."""
    return float(probe.period_seconds * probe.failure_threshold + 1)


def wait_until(check: Callable[[], T | None], what: str, timeout: float) -> T:
    """``check()``'s first true value, polled every 50 ms; TimeoutError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)
    return value


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "n": 0}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 3), "p99": round(p99, 3), "n": len(ordered)}


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object a run writes (atomically), None until it is there."""
    try:
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):  # not written yet, or being replaced
        return None
    return found
