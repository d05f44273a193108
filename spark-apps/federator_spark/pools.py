"""Which FAIR scheduler pool a shared application's member runs its batches in (#41 item 3).

Two pools, whatever the number of members: ``members``, where a member's batches run while it keeps up,
and ``catching-up``, where they run while its batches come full (as many events as its limit lets it read:
it has more waiting). The application's allocation file (:func:`write_allocation`) gives ``members`` a
minimum share no application reaches, so Spark's FAIR scheduler always counts it short of its share and
gives it every slot that frees while it has a task waiting; the catching-up pool takes the slots nobody
keeping up is waiting for. Inside each pool batches run in the order they were submitted (FIFO).

A pool per member, as before, ordered the waiting members by name: Spark's ``FairSchedulingAlgorithm``
gives a freed slot to the pool with the fewest running tasks for its weight, and among pools with none
running to the one whose name sorts first, so whenever several members waited the last by name waited
longest (nine quiet members' p99 580 … 1,297 ms in name order), and a member catching up whose name
sorted first took the slot ahead of every quiet one (their p99 1.7 s against 0.93 s with one that sorted
last; docs/sharing.md). A member's batch is one Spark task at a time (``scheduling.bounded``), so a pool of
its own kept nothing from the others that one pool in submission order does not. Alternated with them
(bench.fleet, a backlog of 400,000): each member's p99 within 0.34 s of the others' against 0.67-8.8 s
apart, all nine's 0.88-1.04 s against 0.77-5.5 s; the backlog moves with what the quiet members leave it
(1,157-1,700 events/s against 1,794-1,951).

The host looks at each member's last batch at each pass (:func:`keep_pool`) and moves its query between
the two while it runs: Spark copies the query's own session settings whose names begin with ``spark``
into the properties of each batch's jobs (``SQLExecution.withSQLConfPropagated``), over those its thread
started with; that session is the query's own clone (``StreamExecution.sparkSessionForStream``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from pyspark import SparkConf

from federator_spark import spark_settings
from federator_spark.pipeline import TaskPlan
from federator_spark.sources.eventhubs_settings import HubSourceSettings

logger = logging.getLogger(__name__)

__all__ = [
    "ALLOCATION_FILE_SETTING",
    "CATCHING_UP_POOL",
    "MEMBERS_MIN_SHARE",
    "MEMBERS_POOL",
    "POOL_PROPERTY",
    "SCHEDULER_MODE",
    "allocation",
    "batch_limit",
    "catching_up",
    "events_between",
    "keep_pool",
    "last_batch_events",
    "pool",
    "scheduler_mode",
    "scheduler_settings",
    "submitted_conf",
    "submitted_scheduler_mode",
    "switch_pool",
    "write_allocation",
]

POOL_PROPERTY = "spark.scheduler.pool"
ALLOCATION_FILE_SETTING = "spark.scheduler.allocation.file"
SCHEDULER_MODE = "spark.scheduler.mode"
MEMBERS_POOL = "members"
CATCHING_UP_POOL = "catching-up"
MEMBERS_MIN_SHARE = 1_000_000
"""More task slots than any application has: the members pool is always short of its minimum share, and
FAIR serves a pool short of its share before any pool that is not."""


def allocation() -> str:
    """Spark's FAIR allocation file for the two pools (``conf/fairscheduler.xml.template``'s format)."""
    pools = {MEMBERS_POOL: MEMBERS_MIN_SHARE, CATCHING_UP_POOL: 0}
    return "".join(
        [
            '<?xml version="1.0"?>\n<allocations>\n',
            *(
                f"  <pool name={quoteattr(name)}><schedulingMode>FIFO</schedulingMode><weight>1</weight>"
                f"<minShare>{share}</minShare></pool>\n"
                for name, share in pools.items()
            ),
            "</allocations>\n",
        ]
    )


def write_allocation(directory: Path) -> Path:
    """The allocation file, written into ``directory``; Spark reads it once, as its context starts."""
    path = directory / "federator-pools.xml"
    path.write_text(allocation(), encoding="utf-8")
    return path


def pool(catching_up: bool) -> str:
    """The pool of a member's batches: ``catching-up`` while its batches come full, ``members`` otherwise."""
    return CATCHING_UP_POOL if catching_up else MEMBERS_POOL


def batch_limit(plan: TaskPlan) -> int | None:
    """The most events ``plan`` reads a batch from its event hub (None: no limit, or a Service Bus entity)."""
    source = plan.source
    return source.max_events if isinstance(source, HubSourceSettings) else None


def catching_up(events: int | None, limit: int | None) -> bool:
    """Whether the member's last batch read ``events`` events, as many as its ``limit`` per batch lets it: it
    has more waiting. None: no batch yet, or no limit."""
    return events is not None and limit is not None and events >= limit


def events_between(start: Mapping[str, int], end: Mapping[str, int]) -> int:
    """How many events a batch from the event hub offsets ``start`` to ``end`` read: each partition's last
    sequence number read, -1 before its first event (``sources/eventhubs.py``)."""
    return sum(last - start.get(partition, -1) for partition, last in end.items())


def last_batch_events(query: Any) -> int | None:
    """How many events the running ``query``'s last batch read from its event hub (None: no batch yet).
    Spark's ``numInputRows`` counts the batch's slices here, not its events (``datasources.py``), so from
    the offsets the batch went between; asked of the JVM's progress object directly, where PySpark's
    ``lastProgress`` would convert the whole progress through JSON at every pass of the host."""
    progress = query._jsq.lastProgress()
    if progress is None:
        return None
    source = progress.sources()[0]
    start, end = source.startOffset(), source.endOffset()
    if start is None or end is None:
        return None
    return events_between(json.loads(start), json.loads(end))


def keep_pool(key: str, query: Any, limit: int | None, behind: bool) -> bool:
    """The member ``key``'s running ``query`` in the catching-up pool while its last batch was full, in the
    members pool otherwise; ``behind``: whether it is in the catching-up pool now. Returns whether it is
    after."""
    try:
        now = catching_up(last_batch_events(query), limit)
        if now != behind:
            switch_pool(query, pool(now))
        return now
    except Exception as err:  # its query ending meanwhile: the host's next pass sees it
        logger.debug("task %s: its scheduler pool not switched: %s", key, err)
        return behind


def switch_pool(query: Any, name: str) -> None:
    """Run the running ``query``'s next batches in the pool ``name`` (the module's docstring says how)."""
    query._jsq.streamingQuery().sparkSessionForStream().conf().set(POOL_PROPERTY, name)


def submitted_scheduler_mode() -> str:
    """The mode the application was submitted with (the operator writes `scheduling.mode` into its Spark
    settings), FAIR by default. spark-submit hands its settings to the JVM: a SparkConf made before the
    gateway to it is up is empty, and FAIR would override a FIFO asked for."""
    return scheduler_mode(submitted_conf())


def submitted_conf() -> SparkConf:
    """The Spark settings the application was submitted with, read from the JVM (started if need be)."""
    spark_settings.launch_jvm()
    return SparkConf()


def scheduler_settings(directory: Path) -> dict[str, str]:
    """The scheduler's settings of the application's session: the mode it was submitted with and, under
    FAIR, the pools above (their allocation file written into ``directory``) unless the application
    names an allocation file of its own."""
    submitted = submitted_conf()
    mode = scheduler_mode(submitted)
    if mode != "FAIR" or submitted.get(ALLOCATION_FILE_SETTING) is not None:
        return {SCHEDULER_MODE: mode}
    return {SCHEDULER_MODE: mode, ALLOCATION_FILE_SETTING: str(write_allocation(directory))}


def scheduler_mode(conf: SparkConf) -> str:
    """FAIR unless the application's settings say otherwise (``spark.scheduler.mode``: FIFO)."""
    return (conf.get(SCHEDULER_MODE) or "FAIR").upper()
