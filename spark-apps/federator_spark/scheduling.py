"""How the members of a shared application share its task slots (#41 item 3).

Each member's jobs run in a FAIR scheduler pool of its own (``federator_spark.host``), but a pool orders
only which waiting task takes a slot that frees; a task that holds a slot keeps it until it ends. An
event hub read with no per-trigger limit reads everything pending in one batch: a member catching up a
backlog of 20,000 events held both slots of ``local[2]`` for seconds at a time, and every other member's
batch waited behind it (``bench.fleet``: quiet members' p99 8-14 s). So a member that sets no
``maxEventsPerTrigger`` of its own reads at most ``MEMBER_EVENTS_PER_TRIGGER`` events a batch in a shared
application: a batch then holds a slot for a fraction of a second and the others' tasks take the slots
between its batches. The price is the backlog's own speed when the machine is saturated: it waits for
slots between the others' batches too (bench.fleet, nine busy members on two cores: 254 against 887
events/s). A task alone in its application reads as before.

The application's ``sparkConf`` may change the bound (``spark.federator.member.maxEventsPerTrigger``;
``0``: none, as a task alone). docs/sharing.md has the figures.
"""

from __future__ import annotations

import dataclasses

from federator_spark.pipeline import TaskPlan
from federator_spark.sources.eventhubs_settings import HubSourceSettings

MEMBER_EVENTS_PER_TRIGGER = 2000
"""About a tenth of a second of one task slot's work at the ~10,000 events/s a slot moves on a small
machine (bench.replication: 15,000-24,000 events/s in ``local[2]``)."""
MEMBER_EVENTS_SETTING = "spark.federator.member.maxEventsPerTrigger"


def member_events_per_trigger(setting: str | None) -> int | None:
    """The bound the application's ``MEMBER_EVENTS_SETTING`` gives (None: no bound); unset, the default."""
    if setting is None:
        return MEMBER_EVENTS_PER_TRIGGER
    try:
        bound = int(setting.strip())
    except ValueError:
        raise ValueError(
            f"{MEMBER_EVENTS_SETTING}: a whole number of events (0: no bound), got {setting!r}"
        ) from None
    if bound < 0:
        raise ValueError(f"{MEMBER_EVENTS_SETTING}: 0 (no bound) or more events, got {bound}")
    return bound or None


def bounded(plan: TaskPlan, events: int | None) -> TaskPlan:
    """``plan`` reading its event hub at most ``events`` events a batch, unless its task sets a limit of
    its own (that one stands) or ``events`` is None. A follower of a FailoverGroup then knows, as when
    its task sets the limit, that a batch need not read every partition to its end."""
    source = plan.source
    if events is None or not isinstance(source, HubSourceSettings) or source.max_events is not None:
        return plan  # a Service Bus entity is read in batches of at most maxMessagesPerBatch already
    write = plan.write
    if write.following is not None:
        write = dataclasses.replace(
            write, following=dataclasses.replace(write.following, covers_all_partitions=False)
        )
    return dataclasses.replace(plan, source=dataclasses.replace(source, max_events=events), write=write)
