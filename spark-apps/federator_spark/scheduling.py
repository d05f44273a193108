"""How the members of a shared application share its task slots (#41 item 3).

Members' jobs run in FAIR scheduler pools (``federator_spark.pools``), but a pool orders only which
waiting task takes a slot that frees; a task that holds a slot keeps it until it ends. An
event hub read with no per-trigger limit reads everything pending in one batch: a member catching up a
backlog of 20,000 events held both slots of ``local[2]`` for seconds at a time, and every other member's
batch waited behind it (``bench.fleet``: quiet members' p99 8-14 s). So a member that sets no
``maxEventsPerTrigger`` of its own reads at most ``MEMBER_EVENTS_PER_TRIGGER`` events a batch in a shared
application: a batch then holds a slot for a fraction of a second and the others' tasks take the slots
between its batches. The price is the backlog's own speed when the machine is saturated: it waits for
slots between the others' batches too (bench.fleet, nine busy members on two cores: 254 against 887
events/s). A task alone in its application reads as before.

A bounded batch is also written by one Spark task, not one per slot: a member catching up then holds one
slot at a time, and the others' batches always find another. With ``local[2]``, a backlog member's
batches of two tasks held both slots, its first ones for seconds while its receivers opened in each
Python worker, and the quiet members' p99 was 1.9-2.1 s; with one task 0.7-0.8 s, and the backlog
caught up faster (bench.fleet, docs/sharing.md). One slot moves more than the bound lets a member read
at the default pace (about 10,000 events/s against 2,000).

A member that sets no trigger interval of its own is also paced: a batch at most every
``MEMBER_TRIGGER_MS``. With none, each member's query starts a batch as soon as its source has anything
new, and a batch costs about 50 ms of CPU however little it holds (Spark's planning, logs and scheduling;
the Python workers): nine members fed 20 events/s each, in four sends a second, made 36 batches a second
and saturated two cores before any backlog (quiet p99 36 s). Paced, the same members make half as many
batches, each holding what came meanwhile, for up to the interval's latency.

Spark's processing-time triggers fire at the same instants for every query with the same interval, so
paced members also get a phase each (:func:`spread`, :func:`phased`): where in the interval their batches
begin, spread over it, so that they come one after the other instead of together
(``sources/trigger_phase.py``; nine members' p50 lag 310 against 460 ms, p99 550-670 against 700-960).

The application's ``sparkConf`` may change the bound (``spark.federator.member.maxEventsPerTrigger``;
``0``: none, as a task alone) and the pace (``spark.federator.member.triggerIntervalMs``; ``0``: none).
docs/sharing.md has the figures.
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise

from federator_contract.api.replicationapplication import (
    MEMBER_EVENTS_SETTING,
    MEMBER_TRIGGER_SETTING,
    member_setting,
)
from federator_spark.pipeline import TaskPlan
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.trigger_phase import TriggerPhase

__all__ = [
    "MEMBER_EVENTS_PER_TRIGGER",
    "MEMBER_EVENTS_SETTING",
    "MEMBER_TRIGGER_MS",
    "MEMBER_TRIGGER_SETTING",
    "bounded",
    "member_events_per_trigger",
    "member_trigger_ms",
    "paced",
    "phased",
    "spread",
]

MEMBER_EVENTS_PER_TRIGGER = 1000
"""About a tenth of a second of one task slot's work at the ~10,000 events/s a slot moves on a small
machine (bench.replication: 15,000-24,000 events/s in ``local[2]``), and at the default pace 2,000 events/s
of a backlog: nine quiet members' p99 during a backlog of 1,000,000 was 0.95-1.26 s with this bound and
1.8 s with 2,000, which caught up at 2,486 events/s against 1,732-1,866 (bench.fleet, docs/sharing.md)."""
MEMBER_TRIGGER_MS = 500
"""Half of the quiet members' 1 s latency goal: a batch waits at most this for its trigger, and its events
have the other half to reach the targets. 250 ms halved nothing where events come four times a second."""


def member_events_per_trigger(setting: str | None) -> int | None:
    """The bound the application's ``MEMBER_EVENTS_SETTING`` gives (None: no bound); unset, the default."""
    return _whole(MEMBER_EVENTS_SETTING, setting, MEMBER_EVENTS_PER_TRIGGER)


def member_trigger_ms(setting: str | None) -> int | None:
    """The trigger interval the application's ``MEMBER_TRIGGER_SETTING`` gives a member without one of
    its own, in milliseconds (None: none, batches back to back); unset, the default."""
    return _whole(MEMBER_TRIGGER_SETTING, setting, MEMBER_TRIGGER_MS)


def _whole(name: str, setting: str | None, default: int) -> int | None:
    """The whole number the setting ``name`` gives (0: None); unset, ``default``. The operator checks an
    application's settings when it is applied; a JVM started otherwise is checked here (ValueError)."""
    if setting is None:
        return default
    return member_setting(name, setting) or None


def bounded(plan: TaskPlan, events: int | None) -> TaskPlan:
    """``plan`` reading its event hub at most ``events`` events a batch, each batch in one Spark task,
    unless its task sets a limit of its own (that one stands, with a task per slot) or ``events`` is
    None. A follower of a FailoverGroup then knows, as when its task sets the limit, that a batch need
    not read every partition to its end."""
    source = plan.source
    if events is None or not isinstance(source, HubSourceSettings) or source.max_events is not None:
        return plan  # a Service Bus entity is read in batches of at most maxMessagesPerBatch already
    write = plan.write
    if write.following is not None:
        write = dataclasses.replace(
            write, following=dataclasses.replace(write.following, covers_all_partitions=False)
        )
    return dataclasses.replace(
        plan, source=dataclasses.replace(source, max_events=events, slice_tasks=1), write=write
    )


def paced(plan: TaskPlan, trigger_ms: int | None) -> TaskPlan:
    """``plan`` triggered every ``trigger_ms`` milliseconds if its task sets no trigger interval of its
    own (that one stands) and ``trigger_ms`` is not None."""
    if trigger_ms is None or plan.trigger_seconds > 0:
        return plan
    return dataclasses.replace(plan, trigger_seconds=trigger_ms / 1000)


def phased(plan: TaskPlan, fraction: float) -> TaskPlan:
    """``plan`` with its batches beginning ``fraction`` (0 <= fraction < 1) into each trigger interval, if
    it has one."""
    if plan.trigger_seconds <= 0:
        return plan
    phase = TriggerPhase(plan.trigger_seconds, fraction * plan.trigger_seconds)
    return dataclasses.replace(plan, source=dataclasses.replace(plan.source, phase=phase))


def spread(taken: list[float]) -> float:
    """A phase for one more member, as a fraction of its interval, given the running members' (each 0 <= f
    < 1): the middle of the widest gap between them around the interval; 0 for the first. Members that come
    and go leave gaps the next ones fill; nine members started together are 1/16 of an interval apart
    at least."""
    if not taken:
        return 0.0
    ordered = sorted(taken)
    start, end = max(
        pairwise([*ordered, ordered[0] + 1]), key=lambda gap: gap[1] - gap[0]
    )  # the first widest
    return (start + end) / 2 % 1.0
