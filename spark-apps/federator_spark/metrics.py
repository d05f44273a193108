"""Replication metrics: a cumulative status file the driver rewrites after every batch, and the
Prometheus endpoint (served by the driver process) that reads it on each scrape, with the outages the
app's processes report beside it (``federator_contract.appstatus``).

The sink's commit runs in a separate Python process per batch, so the status file is the one place
both the commit and the long-lived driver process can share.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from federator_contract import appstatus
from federator_contract.driverstatus import (
    FIRST_BATCH_ON_MEMBER,
    LAG_FILE,
    STATUS_PATH,
    TASKS_PATH,
    TRANSLATION_FILE,
)
from federator_contract.files import write_atomically
from federator_spark.events import iso

logger = logging.getLogger(__name__)


def read_status(path: str) -> dict[str, Any]:
    """A file as the driver last wrote it (the status file: without the outages, never folded in)."""
    try:
        status: dict[str, Any] = json.loads(Path(path).read_text())
        return status
    except FileNotFoundError:
        return {}


def write_status(path: str, status: dict[str, Any]) -> None:
    """Replace the status file whole and durably (the sink's commit and a following source's stay both
    write it)."""
    write_atomically(Path(path), json.dumps(status, indent=2, sort_keys=True), durable=True)


# Events read but deliberately not written, by reason (status file key → TaskReport counter): each is
# counted so "replicated < read" always has an explanation.
DROP_REASONS = {
    "filtered": "filtered",
    "unrouted": "unrouted_dropped",
    "rejected": "rejected_dropped",
    "undeliverable": "undeliverable_dropped",
    "loop": "loop_skipped",
    "following": "following_skipped",
}


def summarize(reports: list[Any], targets: list[str]) -> dict[str, Any]:
    """One batch's task reports as the counts the status file folds in (JSON: the commit record keeps it,
    so a batch whose record exists can still be counted after a crash)."""
    out = dict.fromkeys(targets, 0)
    dead_lettered = dict.fromkeys(targets, 0)
    dropped = dict.fromkeys(DROP_REASONS, 0)
    steps: dict[str, float] = {}
    partitions: dict[str, dict[str, Any]] = {}
    summary: dict[str, Any] = {
        "eventsIn": 0,
        "replaySkipped": 0,
        "lastEnqueued": None,
        "started": time.time(),
    }
    for report in reports:
        if report is None:
            continue
        summary["eventsIn"] += report.events_in
        summary["replaySkipped"] += report.replay_skipped
        summary["started"] = min(summary["started"], report.started)
        for name, count in report.out.items():
            out[name] = out.get(name, 0) + count
        for name, count in report.dead_lettered.items():
            dead_lettered[name] = dead_lettered.get(name, 0) + count
        for reason, attribute in DROP_REASONS.items():
            dropped[reason] += getattr(report, attribute)
        if report.last_enqueued is not None:
            summary["lastEnqueued"] = max(summary["lastEnqueued"] or 0.0, report.last_enqueued)
        for step, seconds in report.steps.items():  # the batch waits for its slowest task
            steps[step] = max(steps.get(step, 0.0), seconds)
        if report.handled_sequence is not None and report.source_partition is not None:
            position = {"sequence": report.handled_sequence, "enqueuedEpoch": report.handled_enqueued}
            _keep_later(partitions, report.source_partition, position)
    return {
        **summary,
        "out": out,
        "deadLettered": dead_lettered,
        "dropped": dropped,
        "steps": steps,
        "partitions": partitions,
    }


STAY = "memberStay"
"""Until the first batch folded after a following task's query started on another member than the one it
ran on last: ``begun``, or ``arrived`` once its source found the member with nothing new (timed then)."""


def begin_stay(path: str) -> None:
    """A following task's query starts on a member it did not run on last (``following.prepare``): its
    arrival there is timed afresh. Without this, a stay without a batch (a member that was down, or idle)
    between two on the same member left the time of the first of those stays standing."""
    status = read_status(path)
    status[STAY] = "begun"
    write_status(path, status)


def arrived(path: str) -> None:
    """A following task's source found its member with nothing new for it at the start of a stay (an
    event hub makes no batch then): it is there and caught up, timed as a first batch would be."""
    status = read_status(path)
    if status.get(STAY) == "begun":
        status[STAY], status[FIRST_BATCH_ON_MEMBER] = "arrived", iso_epoch(time.time())
        write_status(path, status)


def fold(
    path: str, *, task: str, namespace: str, batch_id: int, summary: dict[str, Any], query: str | None = None
) -> dict[str, Any]:
    """Fold one batch's summary into the status file (replaced whole and durably) and return it.
    ``query`` names the query's state (a FailoverGroup member's, when the task follows one): the batch it
    folded last is not folded again (a replay after a crash between its commit record and this fold), and
    the first batch folded for it, or since a stay on a member began (:func:`begin_stay`), is timed (when
    a following source began flowing on its member)."""
    status = read_status(path)
    folded = status.get("lastBatch") or {}
    if query is not None and folded == {"query": query, "batchId": batch_id}:
        logger.info("batch %d: counted before a crash, not counted again", batch_id)
        return status
    stay = status.pop(STAY, None)
    now = time.time()
    per_target = status.get("targets", {})
    for name in {**summary["out"], **summary["deadLettered"]}:
        counts = per_target.setdefault(name, {"eventsOut": 0, "deadLettered": 0})
        counts["eventsOut"] += summary["out"].get(name, 0)
        counts["deadLettered"] += summary["deadLettered"].get(name, 0)
    dropped: dict[str, int] = status.get("eventsDropped", {})
    for reason, count in summary["dropped"].items():
        dropped[reason] = dropped.get(reason, 0) + count
    last_enqueued = status.get("lastEnqueuedEpoch")
    if summary["lastEnqueued"] is not None:
        last_enqueued = max(last_enqueued or 0.0, summary["lastEnqueued"])
    step_seconds: dict[str, float] = status.get("stepSeconds", {})
    for step, seconds in summary["steps"].items():
        step_seconds[step] = round(step_seconds.get(step, 0.0) + seconds, 6)
    partitions: dict[str, dict[str, Any]] = status.get("partitions", {})
    for partition, position in summary.get("partitions", {}).items():
        _keep_later(partitions, partition, position)
    first = stay == "begun" or (stay is None and folded.get("query") != query)
    if query is not None and first:  # the first batch on this member's state, or of this stay
        status[FIRST_BATCH_ON_MEMBER] = iso_epoch(now)
    status.update(
        {
            "task": task,
            "namespace": namespace,
            "lastBatchId": batch_id,
            "lastBatch": {"query": query, "batchId": batch_id},
            "lastBatchTime": iso_epoch(now),
            "batchDurationSeconds": round(now - summary["started"], 3),
            "eventsIn": status.get("eventsIn", 0) + summary["eventsIn"],
            # Written by an attempt of a batch that crashed, found at the targets by its replay: counted in
            # eventsOut once, as they were written once.
            "replaySkipped": status.get("replaySkipped", 0) + summary["replaySkipped"],
            "targets": per_target,
            "eventsDropped": dropped,
            "lastEnqueuedEpoch": last_enqueued,
            "replicationLagSeconds": round(now - last_enqueued, 3) if last_enqueued else None,
            "partitions": partitions,
            # Where the batches' time went (seconds summed over `stepBatches`; per batch, its slowest task's).
            "stepSeconds": step_seconds,
            "stepBatches": status.get("stepBatches", 0) + 1,
        }
    )
    write_status(path, status)
    return status


def _keep_later(partitions: dict[str, dict[str, Any]], partition: str, position: dict[str, Any]) -> None:
    """Per source partition, the last event read: sequence number and source enqueue time."""
    known = partitions.get(partition)
    if known is None or position["sequence"] > known["sequence"]:
        partitions[partition] = position


def iso_epoch(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


Member = tuple[str, str, str]
"""A task a collector reports: its status file, namespace and name."""


class StatusCollector:
    """Prometheus collector exposing status files under the names the operator scrapes: one series per
    task (labels ``namespace`` and ``task``) of each family, for the tasks ``members`` answers at the
    scrape (one for a single-task driver, every task a shared driver serves on that port)."""

    def __init__(self, members: Callable[[], Iterable[Member]]) -> None:
        self.members = members

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        families = _families()
        lag_families = _lag_families(GaugeMetricFamily)
        for path, namespace, task in self.members():
            labels = [namespace, task]
            _add_status(families, labels, appstatus.read_status(path))
            _add_lag(lag_families, labels, read_sibling(path, LAG_FILE))
        yield from families
        yield from lag_families


def _families() -> list[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    latency = GaugeMetricFamily(
        "federator_replication_latency_seconds",
        "Now minus the source enqueue time of the last event written, at the last batch",
        labels=["namespace", "task"],
    )
    replicated = CounterMetricFamily(
        "federator_events_replicated", "Events written per target", labels=["namespace", "task", "target"]
    )
    dead = CounterMetricFamily(
        "federator_events_dead_lettered",
        "Events dead-lettered per target",
        labels=["namespace", "task", "target"],
    )
    dropped = CounterMetricFamily(
        "federator_events_dropped",
        "Events read but not written, by reason: filtered, unrouted (no target matched and no unrouted "
        "endpoint), rejected (an editor rejected it and there is no deadLetter endpoint), undeliverable "
        "(over a target's message size limit and not dead-lettered), loop (merge), "
        "following (already handled on another FailoverGroup member)",
        labels=["namespace", "task", "reason"],
    )
    duration = GaugeMetricFamily(
        "federator_batch_duration_seconds",
        "Duration of the last micro-batch",
        labels=["namespace", "task"],
    )
    unavailable = GaugeMetricFamily(
        "federator_endpoint_unavailable",
        "1 while the source or a target cannot be reached (SourceUnavailable or TargetUnavailable: "
        "retried) or refused the app (e.g. TargetAuthRefused, SourceNotFound: the query stops)",
        labels=["namespace", "task", "role", "endpoint", "reason"],
    )
    return [latency, replicated, dead, dropped, duration, unavailable]


def _add_status(families: list[Any], labels: list[str], status: dict[str, Any]) -> None:
    latency, replicated, dead, dropped, duration, unavailable = families
    for outage in status.get("unavailable", []):
        unavailable.add_metric([*labels, outage["role"], outage["endpoint"], outage["reason"]], 1)
    for reason, count in sorted(status.get("eventsDropped", {}).items()):
        dropped.add_metric([*labels, reason], count)
    if status.get("replicationLagSeconds") is not None:
        latency.add_metric(labels, status["replicationLagSeconds"])
    if "batchDurationSeconds" in status:
        duration.add_metric(labels, status["batchDurationSeconds"])
    for name, counts in sorted(status.get("targets", {}).items()):
        replicated.add_metric([*labels, name], counts["eventsOut"])
        dead.add_metric([*labels, name], counts["deadLettered"])


def _lag_families(family: Any) -> list[Any]:
    """Per source partition: events and seconds behind; for the task: the RPO estimate."""
    events = family(
        "federator_replication_lag_events",
        "Events of the source partition not replicated yet",
        labels=["namespace", "task", "partition"],
    )
    seconds = family(
        "federator_replication_lag_seconds",
        "Enqueue time of the source partition's newest event minus that of the last one replicated",
        labels=["namespace", "task", "partition"],
    )
    rpo = family(
        "federator_failover_rpo_seconds",
        "What a failover now would leave behind: the enqueue-time span of the events not replicated yet",
        labels=["namespace", "task"],
    )
    return [events, seconds, rpo]


def _add_lag(families: list[Any], labels: list[str], lag: dict[str, Any]) -> None:
    events, seconds, rpo = families
    for partition, entry in sorted(lag.get("partitions", {}).items(), key=lambda item: int(item[0])):
        if entry.get("eventsBehind") is not None:
            events.add_metric([*labels, partition], entry["eventsBehind"])
        if entry.get("secondsBehind") is not None:
            seconds.add_metric([*labels, partition], entry["secondsBehind"])
    if lag.get("rpoSeconds") is not None:
        rpo.add_metric(labels, lag["rpoSeconds"])


def serve(port: int, path: str, namespace: str, task: str) -> Any:
    """Start a single-task driver's HTTP endpoint on ``port``: Prometheus metrics at ``/metrics``, and at
    ``/status`` the status file with the lag and translation beside it (what the operator writes into
    the task's status); returns the server (shut it down to stop)."""

    def document(request_path: str) -> Any:
        return driver_status(path) if request_path == STATUS_PATH else None

    return http_server(port, StatusCollector(lambda: [(path, namespace, task)]), document)


def http_server(port: int, collector: StatusCollector, document: Callable[[str], Any]) -> Any:
    """Serve ``collector`` at ``/metrics`` (and any path that is not a document's) and, at ``/status``
    and under ``/tasks/``, what ``document`` answers for the path as JSON (None: 404), in a thread;
    returns the server."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry()
    registry.register(collector)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, status = self.path.split("?")[0].rstrip("/") or "/", 200
            if path == STATUS_PATH or path.startswith(TASKS_PATH + "/"):
                found = document(path)
                if found is None:
                    status, found = 404, {"message": f"no task is served at {path}"}
                body, content_type = json.dumps(found).encode(), "application/json"
            else:
                body, content_type = generate_latest(registry), CONTENT_TYPE_LATEST
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # scrapes are not worth a log line each
            pass

    server = ThreadingHTTPServer(("127.0.0.1" if _local() else "0.0.0.0", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="federator-metrics", daemon=True).start()
    logger.info("metrics on port %d", server.server_port)
    return server


def read_sibling(status_path: str, name: str) -> dict[str, Any]:
    """A file the driver writes beside the status file (``lag.json``, ``translation.json``)."""
    return read_status(str(Path(status_path).parent / name))


def driver_status(status_path: str) -> dict[str, Any]:
    """The status file with the current outages (``unavailable``), and ``lag`` and ``translation`` when
    the driver measured them."""
    status = appstatus.read_status(status_path)
    for key, name in (("lag", LAG_FILE), ("translation", TRANSLATION_FILE)):
        found = read_sibling(status_path, name)
        if found:
            status[key] = found
    return status


def _local() -> bool:
    """Local mode binds to loopback only; in a pod the endpoint must be reachable by Prometheus."""
    return os.environ.get("KUBERNETES_SERVICE_HOST") is None
