"""The loss of a forced switch, confirmed. At the switch the member left is down and cannot be counted, so
the record's `eventsLeftBehind` is an estimate: the lag of the tasks copying from it, as last measured
(events enqueued since are not in it). Once that member answers again, each of those tasks' drivers
counts exactly what it held that the task had not copied before it came back (`status.lag.lastOutage`,
federator_spark/lag.py); when every task copying to the member switched to has counted an outage that
spans the switch, the sum is the record's `eventsLeftBehindConfirmed`, told by the Event
`SwitchLossConfirmed`. The tasks copy those events now, late; the ones the member no longer holds
(`eventsLost`) never arrive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from federator import reasons
from federator.status.events import Note
from federator_contract.api.failovergroup import SwitchRecord
from federator_contract.api.lag import SourceOutage
from federator_contract.api.replicationtask import ReplicationTaskStatus


@dataclass(frozen=True)
class Confirmed:
    records: tuple[SwitchRecord, ...]
    notes: list[Note]


def confirm(records: Sequence[SwitchRecord], tasks: Iterable[Mapping[str, Any]]) -> Confirmed:
    """`records` with each loss that can be confirmed now confirmed (`tasks`: the ReplicationTask objects
    of the group's namespace), and an Event per loss confirmed."""
    outages = _outages(tasks)
    notes: list[Note] = []
    confirmed = []
    for record in records:
        found = _spanning(record, outages)
        if found is not None:
            record = _confirmed(record, found)
            notes.append(_note(record))
        confirmed.append(record)
    return Confirmed(tuple(confirmed), notes)


def _outages(tasks: Iterable[Mapping[str, Any]]) -> dict[str, SourceOutage]:
    """Per task: its source's last outage, as its driver counted it."""
    found = {}
    for task in tasks:
        try:
            lag = ReplicationTaskStatus.model_validate(task.get("status") or {}).lag
        except ValidationError:
            continue
        if lag is not None and lag.last_outage is not None:
            found[str((task.get("metadata") or {}).get("name"))] = lag.last_outage
    return found


def _spanning(record: SwitchRecord, outages: Mapping[str, SourceOutage]) -> list[SourceOutage] | None:
    """The outages that confirm the record's loss: one per task copying to the member switched to, each
    spanning the decision and counted exactly; None while one is missing (or not confirmable)."""
    if record.events_left_behind_confirmed is not None or not record.loss_tasks:
        return None
    found = [outages.get(task) for task in record.loss_tasks]
    if any(o is None or not _spans(o, record.decided) for o in found):
        return None
    spanning = [o for o in found if o is not None]
    if any(not o.exact or o.events_left_behind is None for o in spanning):
        return None
    return spanning


def _spans(outage: SourceOutage, decided: datetime) -> bool:
    """Whether the switch was decided while the source was down as far as the driver knows: after its
    last measurement before the outage (the first failed one may come after the switch: drivers
    measure every few seconds) and before it answered again."""
    after_up = outage.last_seen_up is None or outage.last_seen_up < decided
    return after_up and decided < outage.up_again


def _confirmed(record: SwitchRecord, outages: list[SourceOutage]) -> SwitchRecord:
    lost = sum(o.events_expired for o in outages)
    spans = [o.rpo_seconds for o in outages]
    return record.model_copy(
        update={
            "events_left_behind_confirmed": sum(o.events_left_behind or 0 for o in outages) + lost,
            "events_lost": lost,
            "confirmed_rpo_seconds": None if None in spans else max((s or 0.0 for s in spans), default=0.0),
            "confirmed_at": max(o.up_again for o in outages),
        }
    )


def _note(record: SwitchRecord) -> Note:
    left, lost = record.events_left_behind_confirmed or 0, record.events_lost or 0
    span = f" ({record.confirmed_rpo_seconds:g}s of enqueue time)" if record.confirmed_rpo_seconds else ""
    fate = f"{lost} of them are gone from {record.source} (its retention): lost" if lost else "none is lost"
    message = (
        f"switch {record.source} → {record.target} ({record.cause}): {record.source} answers again; it held "
        f"{left} events{span} not copied to {record.target} before it came back ({_estimate(record)}); "
        f"tasks {', '.join(record.loss_tasks)} copy them now, late; {fate}"
    )
    return Note("Warning" if lost else "Normal", reasons.SWITCH_LOSS_CONFIRMED, message)


def _estimate(record: SwitchRecord) -> str:
    """The estimate the count replaces, and how old it was at the switch."""
    if record.events_left_behind is None:
        return "no estimate at the switch: the tasks' lag showed nothing left, or was not measured"
    measured = _lag_age(record)
    return f"estimated: {record.events_left_behind} at the switch{', ' + measured if measured else ''}"


def _lag_age(record: SwitchRecord) -> str:
    """How old the lag the estimate came from was at the switch ("": not known)."""
    if record.left_behind_measured_at is None:
        return ""
    age = max(0.0, (record.decided - record.left_behind_measured_at).total_seconds())
    return f"from a lag measured {age:.1f}s before the switch"


def loss_words(record: SwitchRecord) -> str | None:
    """What a switch left behind, for a report: the count once confirmed, else the estimate with its age
    (None: neither is known)."""
    if record.events_left_behind_confirmed is not None:
        return confirmed_words(record, record.events_left_behind_confirmed)
    if record.events_left_behind is None:
        return None
    return estimate_words(record, record.events_left_behind)


def confirmed_words(record: SwitchRecord, count: int) -> str:
    """The ``count`` confirmed once the member left answered again, and what became of it."""
    span = f" ({record.confirmed_rpo_seconds:g}s)" if record.confirmed_rpo_seconds is not None else ""
    lost = record.events_lost or 0
    fate = f"{lost} of them lost (gone from {record.source})" if lost else "none lost, copied late"
    return f"{count} events left behind{span}, counted once {record.source} answered again; {fate}"


def estimate_words(record: SwitchRecord, count: int) -> str:
    """The ``count`` estimated at the switch, with how old the lag it came from was."""
    span = f" ({record.rpo_seconds:g}s)" if record.rpo_seconds is not None else ""
    measured = f" {_lag_age(record)}".rstrip()
    return f"{count} events left behind{span}, an estimate{measured}"
