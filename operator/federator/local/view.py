"""The live view of a local run: a table redrawn in place on a terminal; elsewhere (CI, a pipe, a log
file) one line per change of a task's condition, and the table once at the end."""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from federator.local.observe import TaskRow
from federator.status.conditions import timestamp

_STYLE = {"Ready": "green", "Reconciling": "yellow", "Stalled": "red"}


def output_console() -> Console:
    """Standard output. A terminal wraps long messages under the table; a pipe or log file gets 160
    columns rather than rich's 80, unwrapped, since nothing redraws there (COLUMNS still decides)."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        return Console(soft_wrap=True, width=160)
    return console


def task_table(rows: Sequence[TaskRow], caption: Sequence[str] = ()) -> RenderableType:
    table = Table(title="federator local run", title_justify="left", expand=False)
    table.add_column("resource")
    table.add_column("condition")
    table.add_column("reason")
    table.add_column("replicated", justify="right")
    table.add_column("dead-lettered", justify="right")
    table.add_column("lag", justify="right")
    table.add_column("last batch")
    for row in rows:
        table.add_row(
            escape(row.key),
            Text(row.condition, style=_STYLE[row.condition]),
            row.reason,
            _count(row.replicated),
            _count(row.dead_lettered),
            "-" if row.lag_seconds is None else f"{row.lag_seconds:.1f} s",
            timestamp(row.last_batch) if row.last_batch is not None else "-",
        )
    details = [
        Text(f"{r.key}: {line}", style="dim")
        for r in rows
        for line in (r.message if r.condition != "Ready" else "", r.info)
        if line
    ]
    return Group(table, *details, *(Text(line, style="dim") for line in caption))


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


class LiveView:
    """``with LiveView(console) as view: view.update(rows, caption)``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live = Live(console=console, auto_refresh=False) if console.is_terminal else None
        self._seen: dict[str, tuple[str, str]] = {}
        self._last: tuple[list[TaskRow], list[str]] = ([], [])

    def __enter__(self) -> LiveView:
        if self._live is not None:
            self._live.start()
        return self

    def update(self, rows: Sequence[TaskRow], caption: Sequence[str] = ()) -> None:
        self._last = (list(rows), list(caption))
        if self._live is not None:
            self._live.update(task_table(rows, caption), refresh=True)
            return
        for row in rows:
            state = (row.condition, row.reason)
            if self._seen.get(row.key) != state:
                self._seen[row.key] = state
                message = f" - {row.message}" if row.message else ""
                self.console.print(f"{escape(row.key)}: {row.condition} ({row.reason}){escape(message)}")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()  # leaves the last table on screen
        else:
            self.console.print(task_table(*self._last))
