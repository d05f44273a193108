"""The drill's report: per switch the operator's record of each phase (`status.switches`), what it left
behind, and the verdict. Only recorded figures are shown as text, so the same status gives the same
report; the plugin's own wait is in `-o json|yaml` (`waitedSeconds`).

Duplicates seen: each follower's change over the drill in the counts its status carries of the events it
read again and did not write again: skipped because it had handled them on the other member
(`eventsSkippedAfterSwitch`) and found at the targets already by a replayed batch (`eventsFoundWritten`).
A follower whose status has no such count (a driver that does not report it, or one not observed yet)
says so rather than showing a zero nobody counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from federator.failover.confirmation import confirmed_words, estimate_words, loss_words
from federator.kubectl.model import Obj, following_groups, meta, task_status
from federator_contract.api.failovergroup import SwitchRecord

PASSED, REFUSED, FAILED = "passed", "refused", "failed"
EXIT_CODES = {PASSED: 0, REFUSED: 2, FAILED: 3}
"""Exit codes by outcome (1 stays every other failure's: a usage error, an unreachable cluster)."""
NOT_COUNTED = "not counted (its status has no count of events read twice)"
_BAD_CAUSES = {
    "plannedTimeout": "the planned switch timed out waiting for the replication and switched anyway",
    "drainTimeout": "consumers moved before the member they left was drained (drain timeout)",
}


@dataclass
class Leg:
    """One planned switch of the drill and the records the operator wrote for it (a failback writes two:
    producers, then consumers)."""

    source: str
    target: str
    rpo_measured: bool
    """Whether a ReplicationTask copies into the target (else nothing tells what a switch leaves)."""
    records: list[SwitchRecord] = field(default_factory=list)
    error: str | None = None
    waited_seconds: float | None = None


@dataclass(frozen=True)
class Counts:
    """A follower's counts of events read again and not written again, as its status says (None: not
    counted there)."""

    skipped_after_switch: int | None
    found_written: int | None

    def since(self, before: Counts | None) -> Counts:
        """The change from ``before`` (None: the follower was not there before; unknown either side:
        unknown)."""

        def change(now: int | None, then: int | None) -> int | None:
            return None if now is None or then is None else now - then

        if before is None:
            return Counts(None, None)
        return Counts(
            change(self.skipped_after_switch, before.skipped_after_switch),
            change(self.found_written, before.found_written),
        )


def follower_counts(group: str, tasks: list[Obj]) -> dict[str, Counts]:
    """Per task whose source follows `group`, its counts now."""
    counts = {}
    for task in tasks:
        if "source" in (following_groups(task).get(group) or ""):
            status = task_status(task)
            counts[meta(task)[1]] = Counts(status.events_skipped_after_switch, status.events_found_written)
    return counts


@dataclass
class Report:
    namespace: str
    group: str
    outcome: str = PASSED
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    legs: list[Leg] = field(default_factory=list)
    restore_error: str | None = None
    """Why the group's switches could not be made forced again after the drill."""
    duplicates: dict[str, Counts] = field(default_factory=dict)
    """Per follower, the change in its counts over the drill."""

    def judge(self) -> Report:
        """The outcome from the legs: each must have completed, published, flowed and left nothing."""
        if self.outcome == REFUSED:
            return self
        self.reasons = [r for n, leg in enumerate(self.legs, 1) for r in _faults(n, leg)]
        self.reasons += [self.restore_error] if self.restore_error else []
        self.outcome = FAILED if self.reasons else PASSED
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": f"{self.namespace}/{self.group}",
            "outcome": self.outcome,
            "reasons": self.reasons,
            "notes": self.notes,
            "switches": [_leg_dict(leg) for leg in self.legs],
            "duplicates": [
                {
                    "task": task,
                    # The change over the drill of the status counts of those names.
                    "skippedAfterSwitch": counts.skipped_after_switch,
                    "foundWritten": counts.found_written,
                }
                for task, counts in sorted(self.duplicates.items())
            ],
        }


def _faults(number: int, leg: Leg) -> list[str]:
    found = [f"switch {number}: {leg.error}"] if leg.error else []
    for record in leg.records:
        where = f"switch {number} ({record.source} → {record.target}, {record.roles})"
        if record.cause in _BAD_CAUSES:
            found.append(f"{where}: {_BAD_CAUSES[record.cause]}")
        if _left(record):
            found.append(f"{where}: RPO not 0: {loss_words(record)}")
        if record.published_seconds is None:
            found.append(f"{where}: the endpoints were not published")
        late = [f.task for f in record.followers if f.flowing_seconds is None]
        if record.complete and late:
            found.append(f"{where}: not flowing on {record.target}: {', '.join(late)}")
    return found


def _leg_dict(leg: Leg) -> dict[str, Any]:
    return {
        "from": leg.source,
        "to": leg.target,
        "error": leg.error,
        "waitedSeconds": leg.waited_seconds,
        "rpoMeasured": leg.rpo_measured,
        "records": [_record_dict(r) for r in leg.records],
    }


def _record_dict(record: SwitchRecord) -> dict[str, Any]:
    """The operator's record as the status holds it, with the switch's RTO beside it."""
    recorded = record.model_dump(mode="json", by_alias=True)
    return {**recorded, "detectedToLastFollowerSeconds": _recovery(record)}


def _recovery(record: SwitchRecord) -> float | None:
    """Detected → the last follower flowing (→ published when none follows): the switch's RTO."""
    flowing = [f.flowing_seconds for f in record.followers]
    if any(s is None for s in flowing) or record.published_seconds is None:
        return None
    last = max([record.published_seconds, *(s for s in flowing if s is not None)])
    return round(record.decided_seconds + last, 3)


def render(report: Report) -> list[Text]:
    lines = [Text(f"Drill of FailoverGroup {report.namespace}/{report.group}", style="bold")]
    for number, leg in enumerate(report.legs, 1):
        lines.append(Text(f"switch {number}  {leg.source} → {leg.target}", style="bold"))
        for record in leg.records:
            lines.extend(_record_lines(record, leg.rpo_measured))
        if not leg.records:
            lines.append(Text("  no switch recorded", style="yellow"))
    if report.legs:
        lines.extend(_duplicate_lines(report.duplicates))
    return [*lines, *_verdict(report)]


def _duplicate_lines(duplicates: dict[str, Counts]) -> list[Text]:
    """Per follower, the events it read again over the drill and did not write twice."""
    if not duplicates:
        return [Text("duplicates seen  no ReplicationTask source follows the group", style="dim")]
    lines = [Text("duplicates seen (read again, not written again)", style="bold")]
    for task, counts in sorted(duplicates.items()):
        if counts.skipped_after_switch is None or counts.found_written is None:
            lines.append(_row(task, NOT_COUNTED))
            continue
        told = (
            f"{counts.skipped_after_switch} handled on the other member, "
            f"{counts.found_written} found written by a replay"
        )
        lines.append(_row(task, told))
    return lines


def _record_lines(record: SwitchRecord, rpo_measured: bool) -> list[Text]:
    published = record.published_seconds
    lines = [
        Text(f"  {record.source} → {record.target} ({record.cause}, {record.roles})"),
        _row("detected → decided", f"{record.decided_seconds:.1f}s"),
        _row(
            "decided → endpoints published", f"{published:.1f}s" if published is not None else "not published"
        ),
    ]
    for follower in record.followers:
        seconds = follower.flowing_seconds
        told = f"{seconds:.1f}s" if seconds is not None else "not flowing"
        lines.append(_row(f"decided → {follower.task} flowing", told))
    recovery = _recovery(record)
    if recovery is not None:
        lines.append(_row("detected → all flowing (RTO)", f"{recovery:.1f}s"))
    if record.roles != "consumers":
        lines.append(_row("RPO", _rpo(record, rpo_measured)))
    return lines


def _row(label: str, value: str) -> Text:
    return Text(f"    {label:<31}{value}")


def _left(record: SwitchRecord) -> int | None:
    """Events left behind: the count once confirmed, else the estimate."""
    confirmed = record.events_left_behind_confirmed
    return confirmed if confirmed is not None else record.events_left_behind


def _rpo(record: SwitchRecord, measured: bool) -> str:
    """The count once confirmed (0 included: "none lost"); else an estimate that is not 0; else 0, when a
    task copies into the member to measure it."""
    if record.events_left_behind_confirmed is not None:
        return confirmed_words(record, record.events_left_behind_confirmed)
    if record.events_left_behind:
        return estimate_words(record, record.events_left_behind)
    return "0 events left behind" if measured else "not measured (no ReplicationTask copies into the member)"


def _verdict(report: Report) -> list[Text]:
    styles = {PASSED: "bold green", REFUSED: "bold yellow", FAILED: "bold red"}
    if report.outcome == PASSED:
        left = "nothing left behind" if all(leg.rpo_measured for leg in report.legs) else "RPO not measured"
        told = f"{PASSED}: {len(report.legs)} planned switches measured, {left}"
        return [Text(told, style=styles[PASSED])]
    head = {REFUSED: "refused: the group is not healthy enough to drill", FAILED: "failed"}[report.outcome]
    return [
        Text(head, style=styles[report.outcome]),
        *(Text(f"  - {reason}") for reason in report.reasons),
    ]
