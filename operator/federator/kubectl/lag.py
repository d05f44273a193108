"""`kubectl federator lag`: one row per task and source partition, worst first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from federator.kubectl import output
from federator.kubectl.model import (
    Lag,
    Obj,
    View,
    age_seconds,
    ago,
    headline,
    lag_of,
    meta,
    stale_batch,
    task_status,
)


class LagRow(View):
    """One row: a task's partition (or the task as a whole), and the task's state."""

    namespace: str
    task: str
    state: str
    reason: str
    source_member: str | None
    lag: Lag
    stale: bool
    """The last batch is long past: its figures say nothing about now."""

    def to_dict(self) -> dict[str, Any]:
        head = self.model_dump(mode="json", by_alias=True, exclude={"lag", "stale"})
        return {**head, **self.lag.to_dict(), "stale": self.stale}


def rows(tasks: list[Obj], now: datetime | None = None) -> list[LagRow]:
    """Every lag row of every task, worst first: most seconds behind, then most events behind; rows
    without figures (no batch yet) last. A row whose last batch is long past (`stale`) counts as far
    behind as that batch is old: its figures say nothing about now."""
    now = now or datetime.now(UTC)
    found = []
    for task in tasks:
        ns, name = meta(task)
        state, reason, _ = headline(task)
        member = task_status(task).active_source_member
        for lag in lag_of(task):
            stale = stale_batch(lag.last_batch_time, now)
            found.append(
                LagRow(
                    namespace=ns,
                    task=name,
                    state=state,
                    reason=reason,
                    source_member=member,
                    lag=lag,
                    stale=stale,
                )
            )
    return sorted(found, key=lambda row: _badness(row, now))


def _badness(row: LagRow, now: datetime) -> tuple[bool, float, int, str, str, str]:
    seconds, events = row.lag.seconds_behind, row.lag.events_behind
    if row.stale:
        seconds = max(seconds or 0.0, age_seconds(row.lag.last_batch_time, now) or 0.0)
    return (
        seconds is None and events is None,
        -(seconds or 0.0),
        -(events or 0),
        row.namespace,
        row.task,
        row.lag.partition or "",
    )


# (header, justify, in the default table): the rest only with `-o wide`, as kubectl's tables.
_COLUMNS = (
    ("TASK", "left", True),
    ("PARTITION", "left", True),
    ("LAG", "right", True),
    ("BEHIND", "right", True),
    ("REPLICATED", "right", False),
    ("LAST BATCH", "left", True),
    ("SOURCE", "left", False),
    ("STATE", "left", True),
    ("REASON", "left", False),
)


def table(
    found: list[LagRow],
    all_namespaces: bool,
    now: datetime | None = None,
    wide: bool = False,
    where: str = "",
) -> RenderableType:
    """kubectl's table: every column whole however narrow the terminal (a long row runs on, as
    kubectl's do); LAG is the seconds behind, BEHIND the events behind."""
    if not found:
        return Text(f"No ReplicationTasks found{' in ' if where else ''}{where}.")
    now = now or datetime.now(UTC)
    shown = [(name, justify) for name, justify, default in _COLUMNS if default or wide]
    grid = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 2, 0, 0))
    for name, justify in [*([("NAMESPACE", "left")] if all_namespaces else []), *shown]:
        grid.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in found:
        state_style = (
            "green" if row.state == "Ready" else ("bold red" if row.state == "Stalled" else "yellow")
        )
        lag = row.lag
        cells: dict[str, str | Text] = {
            "NAMESPACE": row.namespace,
            "TASK": row.task,
            "PARTITION": "all" if lag.partition is None else lag.partition,
            "LAG": output.seconds(lag.seconds_behind),
            "BEHIND": output.count(lag.events_behind),
            "REPLICATED": output.count(lag.events_replicated),
            "LAST BATCH": (ago(lag.last_batch_time, now) or "never") + (", STALE" if row.stale else ""),
            "SOURCE": row.source_member or "",
            "STATE": Text(row.state, style=state_style),
            "REASON": row.reason,
        }
        grid.add_row(*(cells[str(column.header)] for column in grid.columns))
    return output.Unbounded(grid)
