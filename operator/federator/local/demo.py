"""`federator demo`: a built-in topology on the emulator with generated traffic, then a count at the
targets of what was lost, duplicated, reordered, and how long it took.

Topology: event hub `orders` (4 partitions) in emulator namespace `west` is replicated to `orders` in
`east` (partition i → i, effectively-once), and events with `priority = 'high'` are also routed to
`orders-priority` in `east`. It runs in a fresh state directory, removed afterwards unless something
failed (then its logs are kept and named).

The lag a user cares about is the one of a running application: the first `warmup` seconds of traffic
(while the application's Python workers start and open their receivers and producers) are counted for
loss and duplicates like the rest, but their lag is reported apart, as the start-up's.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from azure.eventhub.exceptions import EventHubError
from rich.console import Console
from rich.table import Table

from federator.local.observe import TaskRow, read_status
from federator.local.plan import plan_local_run
from federator.local.runner import REFRESH_SECONDS, RunError, run_session
from federator.local.session import LocalSession
from federator.local.state import StateDir
from federator.local.tally import TargetTally, read_event_hub, tally
from federator.local.traffic import SentEvent, TrafficGenerator
from federator.local.view import LiveView
from federator.validation.documents import Document
from federator_contract.emulatorconfig import EmulatorConfig

TASK = "default/demo-orders"
MANIFEST = """\
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata:
  name: demo-orders
spec:
  source:
    eventHub:
      connection: {emulator: {namespace: west}}
      eventHubName: orders
      consumerGroup: replication
  targets:
    - name: replica
      eventHub:
        connection: {emulator: {namespace: east}}
        eventHubName: orders
    - name: priority
      condition: "priority = 'high'"
      eventHub:
        connection: {emulator: {namespace: east}}
        eventHubName: orders-priority
  delivery:
    effectivelyOnce: true
"""
# The state is thrown away afterwards, so durability would only cost time.
EMULATOR = {
    "fsync": False,
    "namespaces": [
        {"name": "west", "eventHubs": [{"name": "orders", "partitionCount": 4}]},
        {
            "name": "east",
            "eventHubs": [
                {"name": "orders", "partitionCount": 4},
                {"name": "orders-priority", "partitionCount": 4},
            ],
        },
    ],
}
# Which sent events each target should hold, with where it lives.
TARGETS: dict[str, tuple[str, str, Callable[[SentEvent], bool]]] = {
    "replica": ("east", "orders", lambda e: True),
    "priority": ("east", "orders-priority", lambda e: e.priority == "high"),
}
START_TIMEOUT_SECONDS = 300.0
"""A Spark JVM starts in 10-30 s; more on a busy laptop."""


@dataclass
class DemoResult:
    produced: int = 0
    send_errors: int = 0
    targets: dict[str, TargetTally] = field(default_factory=dict)
    problem: str | None = None
    """Why the demo could not complete its measurement."""

    @property
    def lost(self) -> int:
        return sum(t.lost for t in self.targets.values())

    @property
    def ok(self) -> bool:
        return (
            self.problem is None
            and self.produced > 0
            and len(self.targets) == len(TARGETS)
            and self.lost == 0
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "produced": self.produced,
            "sendErrors": self.send_errors,
            "lost": self.lost,
            "problem": self.problem,
            "targets": {name: t.as_json() for name, t in self.targets.items()},
        }


def run_demo(
    *,
    duration: float,
    rate: float,
    drain_timeout: float,
    summary_json: Path | None,
    out: Console,
    warmup: float = 20.0,
) -> int:
    root = Path(tempfile.mkdtemp(prefix="federator-demo-"))
    state = StateDir(root)
    documents = [Document("built-in demo", i, body) for i, body in enumerate(yaml.safe_load_all(MANIFEST))]
    plan = plan_local_run(
        documents, state=state, environ={}, emulator_config=EmulatorConfig.model_validate(EMULATOR)
    )
    if plan.blocked or not plan.tasks:
        raise RuntimeError(f"the built-in demo topology does not plan: {plan.blocked}")
    result = DemoResult()

    def work(session: LocalSession, view: LiveView, stop: threading.Event) -> None:
        _measure(
            session,
            view,
            stop,
            result,
            duration=duration,
            rate=rate,
            drain_timeout=drain_timeout,
            warmup=warmup,
        )

    try:
        session = run_session(plan, state, out, work)
    except RunError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    if session.failed and result.problem is None:
        result.problem = "the replication app failed (see its log)"
    out.print(summary_table(result, duration, rate, warmup))
    if summary_json is not None:
        summary_json.write_text(json.dumps(result.as_json(), indent=2), encoding="utf-8")
    if result.ok:
        shutil.rmtree(root, ignore_errors=True)
        out.print("[green]nothing lost[/]")
        return 0
    out.print(f"[red]{result.problem or f'{result.lost} events lost'}[/]; logs kept in {root}")
    return 1


def _measure(
    session: LocalSession,
    view: LiveView,
    stop: threading.Event,
    result: DemoResult,
    *,
    duration: float,
    rate: float,
    drain_timeout: float,
    warmup: float,
) -> None:
    """Wait for the task, send (warming up, then measured), wait for the tail, count: the demo's phases."""

    def show(caption: str) -> TaskRow:
        rows = session.rows()
        view.update(rows, [caption, *session.caption()])
        return next(r for r in rows if r.key == TASK)

    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while (row := show("waiting for the Spark application to start")).condition != "Ready":
        if row.condition == "Stalled" or stop.is_set() or time.monotonic() > deadline:
            result.problem = f"the task did not start: {row.reason} {row.message}"
            return
        stop.wait(REFRESH_SECONDS)

    connections = {name: ns["connectionString"] for name, ns in session.ready["namespaces"].items()}
    traffic = TrafficGenerator(
        connections["west"], "orders", rate=rate, duration=warmup + duration, stop=stop
    )
    warm_from = time.time() + warmup
    traffic.start()
    while traffic.is_alive():
        phase = "warming up" if time.time() < warm_from else "measuring"
        errors = traffic.send_errors
        show(f"sending ({phase}): {traffic.produced:,} events at {rate:g}/s ({errors} send errors)")
        traffic.join(REFRESH_SECONDS)
    result.produced, result.send_errors = traffic.produced, traffic.send_errors
    if stop.is_set():
        result.problem = "interrupted"
        return

    status_file = session.state.status_file("default", "demo-orders")
    expected = {
        name: sum(1 for e in traffic.sent.values() if want(e)) for name, (_, _, want) in TARGETS.items()
    }
    deadline = time.monotonic() + drain_timeout
    while time.monotonic() < deadline and not stop.is_set():
        written = read_status(status_file).get("targets") or {}
        if all(written.get(name, {}).get("eventsOut", 0) >= count for name, count in expected.items()):
            break
        show(f"sent {result.produced:,}; waiting for the tail to be replicated")
        stop.wait(REFRESH_SECONDS)

    show("counting at the targets")
    try:
        for name, (namespace, hub, want) in TARGETS.items():
            received = read_event_hub(connections[namespace], hub)
            result.targets[name] = tally(traffic.sent, received, want, warm_from)
    except (TimeoutError, OSError, EventHubError) as problem:
        result.problem = f"could not read the targets: {problem}"


def summary_table(result: DemoResult, duration: float, rate: float, warmup: float) -> Table:
    table = Table(
        title=f"demo: {result.produced:,} events sent at {rate:g}/s, {warmup:g} s warming up then "
        f"{duration:g} s measured ({result.send_errors} send errors); lag = send → target enqueue",
        title_justify="left",
    )
    columns = ("target", "expected", "replicated", "lost", "duplicated", "unexpected", "out of order")
    for column in (*columns, "lag p50", "lag p99", "start-up p99"):
        table.add_column(column, justify="left" if column == "target" else "right")
    for name, t in result.targets.items():
        table.add_row(
            name,
            f"{t.expected:,}",
            f"{t.replicated:,}",
            f"[red]{t.lost:,}[/]" if t.lost else "0",
            f"{t.duplicated:,}",
            f"{t.unexpected:,}",
            f"{t.out_of_order:,}",
            _seconds(t.lag_p50_seconds),
            _seconds(t.lag_p99_seconds),
            _seconds(t.startup_lag_p99_seconds),
        )
    return table


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"
