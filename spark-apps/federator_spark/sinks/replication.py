"""The stream writer behind every sink: one task per source partition runs the editor chain, routes
each event, adds the pattern metadata and publishes to the targets; the driver then writes the
batch's commit record (``commits.py``) and the status file. With effectively-once delivery each source
partition's part of a batch is guarded against publishing twice (``sinks/replay.py``).

Per-partition order holds because a task sees one source partition in sequence order and each
publisher sends a destination's events in that order.

An event an editor rejects (or that makes an editor raise) goes to the dead-letter endpoint with
``repl-dead-letter-reason`` = ``<editor index>:<kind>: <reason>``, as it entered that editor; one a
target refuses for good (over its message size limit) goes there with ``target:<name>: <reason>``.
Without a dead-letter endpoint (or when that refuses it too) the event is dropped, counted and logged
(the reason, never the body). Either way the stream goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage

from federator_contract.names import DEAD_LETTER_REASON_PROPERTY
from federator_spark import failpoints, following, logs, metrics, worker_gc
from federator_spark.commits import RETAIN_FROM, CommitLog
from federator_spark.editors.base import EditorStep, Rejected, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event
from federator_spark.plan import DEAD_LETTER, TargetPlan, WritePlan
from federator_spark.property_types import still_tagged, typed
from federator_spark.provenance import forwarded_properties, is_loop
from federator_spark.sinks import kept_clients
from federator_spark.sinks.undeliverable import Undeliverable

if TYPE_CHECKING:
    from federator_spark.sinks.replay import ReplayGuard

logger = logging.getLogger(__name__)

_REASON_LIMIT = 1024  # characters of a dead-letter reason (property values have size limits)
_LOGGED_DROPS = 10  # per task; the rest are only counted, so a poison stream cannot flood logs


@dataclass
class TaskReport(WriterCommitMessage):
    """What one write task did; counts feed the metrics."""

    source_partition: str | None = None
    started: float = field(default_factory=time.time)
    events_in: int = 0
    out: dict[str, int] = field(default_factory=dict)
    dead_lettered: dict[str, int] = field(default_factory=dict)
    filtered: int = 0
    rejected_dropped: int = 0  # rejected by an editor while the task has no dead-letter endpoint
    undeliverable_dropped: int = 0  # refused by a target for good and not dead-lettered
    unrouted_dropped: int = 0
    loop_skipped: int = 0
    replay_skipped: int = 0  # published by an earlier attempt of the batch: counted as written too
    batch_already_committed: bool = False
    last_enqueued: float | None = None
    # The last event of the partition read (written, skipped or dropped alike): the replication lag's
    # position in the source partition.
    handled_sequence: int | None = None
    handled_enqueued: float | None = None
    steps: dict[str, float] = field(default_factory=dict)  # seconds spent per step (metrics.summarize)
    following: dict[str, Any] | None = None  # what the task handled, when the source follows a group

    @property
    def following_skipped(self) -> int:
        """Events skipped because the task already handled them on another FailoverGroup member."""
        return int(self.following["skipped"]) if self.following else 0


@dataclass
class TaskReports(WriterCommitMessage):
    """What one Spark write task did, per source partition (a task reading slices writes several)."""

    reports: list[TaskReport] = field(default_factory=list)


def _publisher(target: TargetPlan, plan: WritePlan, guard: ReplayGuard | None) -> Any:
    """A publisher has ``add(event, properties)``, ``flush()`` and ``close()``; imported lazily so an
    executor loads only the SDKs its targets need."""
    if target.kind == "eventHub":
        from federator_spark.sinks.eventhubs import EventHubPublisher

        return EventHubPublisher(target, guard, plan.status_file)
    if target.kind == "postgres":
        from federator_spark.sinks.postgres import PostgresPublisher

        return PostgresPublisher(target, task=f"{plan.namespace}/{plan.task}", status_file=plan.status_file)
    from federator_spark.sinks.servicebus import ServiceBusPublisher

    return ServiceBusPublisher(target, plan.status_file)


def _open_ahead(plan: WritePlan) -> None:
    """Start opening the Event Hubs targets' clients (seconds with the SDK) while the source opens."""
    hubs = [target for target in plan.targets.values() if target.kind == "eventHub"]
    if hubs:
        from federator_spark.sinks.eventhubs_producers import prepare

        for target in hubs:
            prepare(target)


class _Task:
    """One write task: its editor steps, publishers and counts."""

    def __init__(
        self, plan: WritePlan, report: TaskReport, guard: ReplayGuard | None, steps: list[EditorStep]
    ) -> None:
        self.plan = plan
        self.report = report
        self.guard = guard
        # Effectively-once: what an earlier attempt of the batch already published, per endpoint.
        self.published = guard.published if guard is not None else {}
        self.steps = steps
        self.publishers: dict[str, Any] = {}
        self.dropped = 0  # rejected or undeliverable events dropped: the first few are logged

    def replicate(self, event: Event) -> None:
        plan, report = self.plan, self.report
        message = EventMessage(event)
        for index, step in enumerate(self.steps):
            try:
                edited = step.apply(event, message)
            except Rejected as rejection:
                self.reject(event, index, str(rejection))
                return
            except Exception as error:  # a poison event must not stop the stream
                self.reject(event, index, f"{type(error).__name__}: {error}")
                return
            if edited is None:
                report.filtered += 1
                return
            if edited is not event:  # conditions and later editors read the edited event
                event, message = edited, EventMessage(edited)
        names = plan.router.targets(message)
        if not names:
            report.unrouted_dropped += 1
        for name in names:
            target = plan.targets[name]
            if is_loop(event, target.identity, plan.loop):
                report.loop_skipped += 1
                continue
            if self.send(name, target, event, None):
                report.out[name] = report.out.get(name, 0) + 1
        self.seen(event)

    def reject(self, event: Event, index: int, text: str) -> None:
        reason = f"{index}:{self.plan.editors[index].kind}: {text}"[:_REASON_LIMIT]
        if not self.dead_letter(event, reason):
            self.report.rejected_dropped += 1
            self.log_drop(event, "no deadLetter endpoint", reason)

    def refused(self, name: str, event: Event, text: str) -> None:
        """Target ``name`` can never take ``event``: dead-letter it, or drop it when that is the
        dead-letter endpoint refusing."""
        reason = f"target:{name}: {text}"[:_REASON_LIMIT]
        if name == DEAD_LETTER or not self.dead_letter(event, reason):
            self.report.undeliverable_dropped += 1
            self.log_drop(event, "undeliverable", reason)

    def dead_letter(self, event: Event, reason: str) -> bool:
        """Send ``event`` to the dead-letter endpoint with ``reason``; False when there is none."""
        dead_letter = self.plan.dead_letter
        if dead_letter is None:
            return False
        if self.send(DEAD_LETTER, dead_letter, event, {DEAD_LETTER_REASON_PROPERTY: reason}):
            self.report.dead_lettered[DEAD_LETTER] = self.report.dead_lettered.get(DEAD_LETTER, 0) + 1
        self.seen(event)
        return True

    def log_drop(self, event: Event, why: str, reason: str) -> None:
        self.dropped += 1
        if self.dropped <= _LOGGED_DROPS:
            logger.warning("event %s dropped (%s): %s", event.identity, why, reason)

    def send(self, name: str, target: TargetPlan, event: Event, extra: dict[str, str] | None) -> bool:
        """Publish ``event`` to ``target`` (True also when an earlier attempt of the batch published it);
        False when the target refused it for good (then it is dead-lettered or dropped)."""
        if event.sequence_number in self.published.get(name, ()):
            self.report.replay_skipped += 1
            return True
        publisher = self.publishers.get(name)
        if publisher is None:
            publisher = self.publishers[name] = _publisher(target, self.plan, self.guard)
        properties = forwarded_properties(event, target.identity, self.plan.provenance, self.plan.loop)
        properties.update(target.set_properties)  # after routing: conditions never see them
        if extra:
            properties.update(extra)
        types = event.property_types and still_tagged(event.property_types, event.properties, properties)
        try:
            publisher.add(event, typed(properties, types) if types else properties)
        except Undeliverable as refusal:
            self.refused(name, event, str(refusal))
            return False
        return True

    def seen(self, event: Event) -> None:
        enqueued = event.enqueued_time.timestamp()
        self.report.last_enqueued = max(self.report.last_enqueued or 0.0, enqueued)


def _add(steps: dict[str, float], step: str, seconds: float) -> None:
    steps[step] = steps.get(step, 0.0) + seconds


def _timed(events: Iterator[Event], steps: dict[str, float], step: str) -> Iterator[Event]:
    """``events``, adding the time spent waiting for each to ``steps[step]``."""
    while True:
        waiting = time.perf_counter()
        event = next(events, None)
        _add(steps, step, time.perf_counter() - waiting)
        if event is None:
            return
        yield event


class SliceReader(Protocol):
    """What reads the events of a task's slice rows (``sources/eventhubs_slices.py``,
    ``sources/servicebus_slices.py``)."""

    def events_by_partition(self, slices: Iterable[Any]) -> Iterator[Iterator[Event]]: ...


class ReplicationWriter(DataSourceStreamWriter):
    """Writes rows of events (:data:`~federator_spark.events.SCHEMA`), or, given ``slices``, rows of
    slices whose events it reads itself."""

    def __init__(self, plan: WritePlan, slices: SliceReader | None = None) -> None:
        logs.configure()  # the driver's processes that plan the write and commit batches
        worker_gc.freeze_loaded()
        self.plan = plan
        self.slices = slices

    def events_by_partition(self, rows: Iterator[Any]) -> Iterator[Iterator[Event]]:
        """The task's events, an iterator per source partition, each consumed before the next: rows
        of events are one partition, rows of slices one partition each."""
        if self.slices is not None:
            return self.slices.events_by_partition(rows)
        return iter([map(Event.from_row, rows)])

    # ------------------------------------------------------------------------------------ executor side

    def write(self, iterator: Iterator[Any]) -> TaskReports:
        from pyspark import TaskContext

        logs.configure()  # an executor's Python worker
        worker_gc.freeze_loaded()
        context = TaskContext.get()
        batch_id = int(context.getLocalProperty("streaming.sql.batchId") or 0) if context else 0
        log = CommitLog(self.plan.state_dir) if self.plan.state_dir else None
        if self.plan.effectively_once and log is not None and log.exists(batch_id):
            # Every write of this batch succeeded before the crash; Spark just had not logged it.
            logger.info("batch %d already committed, skipping its replay", batch_id)
            return TaskReports([TaskReport(batch_already_committed=True)])
        started = time.perf_counter()
        steps: dict[str, float] = {}
        with kept_clients.task_running():  # the worker's kept clients stay open while a task may use them
            _open_ahead(self.plan)
            reports = [self._write(batch_id, events, steps) for events in self.events_by_partition(iterator)]
        if reports:  # the task's steps, once: the batch waits for its slowest task (metrics.summarize)
            reports[0].steps = {**steps, "task": time.perf_counter() - started}
        return TaskReports(reports)

    def _write(self, batch_id: int, source: Iterator[Event], steps: dict[str, float]) -> TaskReport:
        """Replicate one source partition's events of the batch, adding the time of each step to
        ``steps``: waiting for the source's events, for the targets to accept them (flush), and the
        effectively-once guard's (``ReplayGuard.seconds``)."""
        events = _timed(source, steps, "receive")
        report = TaskReport()
        task: _Task | None = None
        scope: TaskScope | None = None
        follower: following.Follower | None = None
        event: Event | None = None
        try:
            for event in events:
                if task is None:  # the first event names the source partition
                    report.source_partition = event.partition
                    scope = TaskScope(event.partition, batch_id, self.plan.state_dir)
                    editing = [editor.open(scope) for editor in self.plan.editors]
                    task = _Task(self.plan, report, self._guard(batch_id, event), editing)
                    if self.plan.following is not None:
                        follower = following.open_task(self.plan.following, batch_id, event)
                report.events_in += 1
                if follower is not None and not follower.admit(event):
                    continue  # handled before a FailoverGroup switch
                task.replicate(event)
            if task is not None and scope is not None:
                flushing = time.perf_counter()
                for publisher in task.publishers.values():
                    publisher.flush()
                _add(steps, "flush", time.perf_counter() - flushing)
                failpoints.reached("partition-published", batch_id)
                scope.published()  # stateful editors save this batch's state only now
            if follower is not None:
                report.following = follower.report()
            if event is not None:
                report.handled_sequence = event.sequence_number
                report.handled_enqueued = event.enqueued_time.timestamp()
        finally:
            if task is not None:
                for publisher in task.publishers.values():
                    publisher.close()
                if task.guard is not None:
                    for step, seconds in task.guard.seconds.items():
                        _add(steps, step, seconds)
        if task is not None and task.dropped > _LOGGED_DROPS:
            logger.warning(
                "batch %d partition %s: %d rejected and %d undeliverable events dropped",
                batch_id,
                report.source_partition,
                report.rejected_dropped,
                report.undeliverable_dropped,
            )
        return report

    def _guard(self, batch_id: int, first: Event) -> ReplayGuard | None:
        """Effectively-once on Event Hubs endpoints (Service Bus targets rely on MessageId duplicate
        detection, PostgreSQL tables on their keys)."""
        plan = self.plan
        if not plan.effectively_once or not any(t.kind == "eventHub" for t in plan.endpoints.values()):
            return None
        from federator_spark.sinks.replay import ReplayGuard

        return ReplayGuard(plan, batch_id, first)

    # ------------------------------------------------------------------------------------ driver side

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        plan = self.plan
        reports = [r for m in messages if isinstance(m, TaskReports) for r in m.reports]
        summary = metrics.summarize(reports, list(plan.endpoints))
        if plan.state_dir is not None:
            log = CommitLog(plan.state_dir)
            record = log.read(batchId)
            if record is None:
                summary = self._record(log, batchId, reports, summary)
            else:  # a replay: the tasks skipped the batch; its counts are the record's
                logger.info("batch %d: commit record exists (replayed batch)", batchId)
                summary = record.get("summary") or summary
        self._record_status(batchId, summary)
        failpoints.reached("counted", batchId)

    def _record(
        self, log: CommitLog, batch_id: int, reports: list[TaskReport], summary: dict[str, Any]
    ) -> dict[str, Any]:
        """Write the batch's commit record (its counts in it), prune the ones no restart needs; returns the
        summary with the record's own cost."""
        plan = self.plan
        started = time.perf_counter()
        previous = log.latest_before(batch_id)
        record: dict[str, Any] = {"summary": summary}
        if plan.following is not None:
            handled = [r.following for r in reports if r.following is not None]
            record["following"] = following.fold(plan.following, previous, handled)
            skipped = sum(h["skipped"] for h in handled)
            if skipped:
                logger.info("batch %d: %d events skipped, handled before a member switch", batch_id, skipped)
        if summary["replaySkipped"]:
            logger.info(
                "batch %d: %d events were at the targets already (sent before a crash)",
                batch_id,
                summary["replaySkipped"],
            )
        retain = self._retain_from(log, batch_id, previous, record)
        log.write(batch_id, {**record, RETAIN_FROM: retain})
        failpoints.reached("recorded", batch_id)
        log.prune(previous.get(RETAIN_FROM, retain) if previous else retain, retain)
        return {**summary, "steps": {**summary["steps"], "commitRecord": time.perf_counter() - started}}

    def _retain_from(
        self, log: CommitLog, batch_id: int, previous: dict[str, Any] | None, record: dict[str, Any]
    ) -> int:
        """The oldest record still needed once ``batch_id``'s is written: those of Spark's retained batches
        (a restart needs the one before the batch it replays), and for a Service Bus source that follows a
        FailoverGroup enough to carry the newest keys to the next member."""
        floor = batch_id - max(self.plan.retain_batches, 2) + 1
        oldest = previous.get(RETAIN_FROM, floor) if previous else floor
        plan = self.plan
        if plan.following is not None and not plan.following.by_position:
            return following.oldest_with_recent_keys(log, oldest, floor, record["following"])
        return max(oldest, floor)

    def _record_status(self, batch_id: int, summary: dict[str, Any]) -> None:
        if self.plan.status_file is None:
            return
        metrics.fold(
            self.plan.status_file,
            task=self.plan.task,
            namespace=self.plan.namespace,
            batch_id=batch_id,
            summary=summary,
            query=self.plan.state_dir,
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        done = sum(1 for m in messages if m is not None)
        logger.warning(
            "batch %d aborted (%d of %d tasks had finished); it is replayed on restart",
            batchId,
            done,
            len(messages),
        )
