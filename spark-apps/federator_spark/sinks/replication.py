"""The stream writer behind every sink: one task per source partition runs the editor chain, routes
each event, adds the pattern metadata and publishes to the targets; the driver then writes the
batch's commit record and the status file.

Per-partition order holds because a task sees one source partition in sequence order and each
publisher sends a destination's events in that order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage

from federator_spark import metrics
from federator_spark.commits import CommitLog
from federator_spark.events import Event
from federator_spark.plan import TargetPlan, WritePlan
from federator_spark.provenance import forwarded_properties, is_loop

logger = logging.getLogger(__name__)


@dataclass
class TaskReport(WriterCommitMessage):
    """What one write task did; counts feed the metrics."""

    source_partition: str | None = None
    started: float = field(default_factory=time.time)
    events_in: int = 0
    out: dict[str, int] = field(default_factory=dict)
    dead_lettered: dict[str, int] = field(default_factory=dict)
    filtered: int = 0
    unrouted_dropped: int = 0
    loop_skipped: int = 0
    replay_skipped: int = 0
    batch_already_committed: bool = False
    last_enqueued: float | None = None


def _publisher(target: TargetPlan) -> Any:
    """A publisher has ``add(event, properties)``, ``flush()`` and ``close()``; imported lazily so an
    executor loads only the SDKs its targets need."""
    if target.kind == "eventHub":
        from federator_spark.sinks.eventhubs import EventHubPublisher

        return EventHubPublisher(target)
    if target.kind == "postgres":
        from federator_spark.sinks.postgres import PostgresPublisher

        return PostgresPublisher(target)
    from federator_spark.sinks.servicebus import ServiceBusPublisher

    return ServiceBusPublisher(target)


class ReplicationWriter(DataSourceStreamWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    # ------------------------------------------------------------------------------------ executor side

    def write(self, iterator: Iterator[Any]) -> TaskReport:
        from pyspark import TaskContext

        context = TaskContext.get()
        batch_id = int(context.getLocalProperty("streaming.sql.batchId")) if context else 0
        report = TaskReport()
        log = CommitLog(self.plan.state_dir) if self.plan.state_dir else None
        if self.plan.effectively_once and log is not None and log.exists(batch_id):
            # Every write of this batch succeeded before the crash; Spark just had not logged it.
            report.batch_already_committed = True
            logger.info("batch %d already committed, skipping its replay", batch_id)
            return report
        publishers: dict[str, Any] = {}
        published: dict[str, set[int]] | None = None
        try:
            for row in iterator:
                event = Event.from_row(row)
                if published is None:
                    report.source_partition = event.partition
                    published = self._already_published(log, batch_id, event)
                self._replicate(event, report, publishers, published)
            for publisher in publishers.values():
                publisher.flush()
        finally:
            for publisher in publishers.values():
                publisher.close()
        return report

    def _replicate(
        self, event: Event, report: TaskReport, publishers: dict[str, Any], published: dict[str, set[int]]
    ) -> None:
        plan = self.plan
        report.events_in += 1
        message = event.sql_message()
        edited: Event | None = event
        for editor in plan.editors:
            edited = editor.apply(edited, message)
            if edited is None:
                report.filtered += 1
                return
        names = plan.router.targets(message)
        if not names:
            report.unrouted_dropped += 1
        for name in names:
            target = plan.targets[name]
            if is_loop(edited, target.identity, plan.loop):
                report.loop_skipped += 1
                continue
            if edited.sequence_number in published.get(name, ()):
                report.replay_skipped += 1
                continue
            if name not in publishers:
                publishers[name] = _publisher(target)
            publishers[name].add(
                edited, forwarded_properties(edited, target.identity, plan.provenance, plan.loop)
            )
            report.out[name] = report.out.get(name, 0) + 1
        enqueued = event.enqueued_time.timestamp()
        report.last_enqueued = max(report.last_enqueued or 0.0, enqueued)

    def _already_published(self, log: CommitLog | None, batch_id: int, event: Event) -> dict[str, set[int]]:
        """Effectively-once: source sequence numbers of this partition that a crashed attempt of this
        batch already published, per Event Hubs target (Service Bus targets rely on MessageId
        duplicate detection instead)."""
        if not self.plan.effectively_once or log is None:
            return {}
        record = log.latest_before(batch_id)
        if record is None:
            raise RuntimeError(f"no commit record before batch {batch_id}: effectively-once cannot resume")
        from federator_spark.sinks.eventhubs import published_sequences

        prefix = f"{event.source}/{event.partition}/"
        return {
            name: published_sequences(target, record["targetTails"].get(name, {}), event.partition, prefix)
            for name, target in self.plan.targets.items()
            if target.kind == "eventHub"
        }

    # ------------------------------------------------------------------------------------ driver side

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        plan = self.plan
        reports = [m for m in messages if isinstance(m, TaskReport)]
        if plan.state_dir is None:
            self._record_status(batchId, reports)
            return
        log = CommitLog(plan.state_dir)
        if log.exists(batchId):
            logger.info("batch %d: commit record exists (replayed batch), not counted again", batchId)
            return
        record = {
            "events": {name: sum(r.out.get(name, 0) for r in reports) for name in plan.targets},
            "targetTails": record_tails(plan) if plan.effectively_once else {},
        }
        log.write(batchId, record)
        self._record_status(batchId, reports)

    def _record_status(self, batch_id: int, reports: list[TaskReport]) -> None:
        if self.plan.status_file is None:
            return
        metrics.record_batch(
            self.plan.status_file,
            task=self.plan.task,
            namespace=self.plan.namespace,
            batch_id=batch_id,
            reports=reports,
            targets=list(self.plan.targets),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        done = sum(1 for m in messages if m is not None)
        logger.warning(
            "batch %d aborted (%d of %d tasks had finished); it is replayed on restart",
            batchId,
            done,
            len(messages),
        )


def record_tails(plan: WritePlan) -> dict[str, dict[str, int]]:
    """Each Event Hubs target's last sequence numbers: where the next batch's replay scan starts."""
    from federator_spark.sinks.eventhubs import tails

    return {name: tails(target) for name, target in plan.targets.items() if target.kind == "eventHub"}
