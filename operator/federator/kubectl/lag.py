"""`kubectl federator lag`: one row per task and source partition, worst first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from federator.kubectl import output
from federator.kubectl.model import Obj, age_seconds, ago, headline, lag_of, meta, stale_batch, status_of


def rows(tasks: list[Obj], now: datetime | None = None) -> list[dict[str, Any]]:
    """Every lag row of every task, worst first: most seconds behind, then most events behind; rows
    without figures (no batch yet) last. A row whose last batch is long past (`stale`) counts as far
    behind as that batch is old: its figures say nothing about now."""
    now = now or datetime.now(UTC)
    found = []
    for task in tasks:
        ns, name = meta(task)
        state, reason, _ = headline(task)
        for lag in lag_of(task):
            found.append(
                {
                    "namespace": ns,
                    "task": name,
                    "state": state,
                    "reason": reason,
                    "sourceMember": status_of(task).get("activeSourceMember"),
                    **lag.to_dict(),
                    "stale": stale_batch(lag.last_batch_time, now),
                }
            )
    return sorted(found, key=lambda row: _badness(row, now))


def _badness(row: dict[str, Any], now: datetime) -> tuple[bool, float, int, str, str, str]:
    seconds, events = row["secondsBehind"], row["eventsBehind"]
    if row["stale"]:
        seconds = max(seconds or 0.0, age_seconds(row["lastBatchTime"], now) or 0.0)
    return (
        seconds is None and events is None,
        -(seconds or 0.0),
        -(events or 0),
        row["namespace"],
        row["task"],
        row["partition"] or "",
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
    found: list[dict[str, Any]],
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
            "green" if row["state"] == "Ready" else ("bold red" if row["state"] == "Stalled" else "yellow")
        )
        cells = {
            "NAMESPACE": row["namespace"],
            "TASK": row["task"],
            "PARTITION": "all" if row["partition"] is None else row["partition"],
            "LAG": output.seconds(row["secondsBehind"]),
            "BEHIND": output.count(row["eventsBehind"]),
            "REPLICATED": output.count(row["eventsReplicated"]),
            "LAST BATCH": (ago(row["lastBatchTime"], now) or "never") + (", STALE" if row["stale"] else ""),
            "SOURCE": row["sourceMember"] or "",
            "STATE": Text(row["state"], style=state_style),
            "REASON": row["reason"],
        }
        grid.add_row(*(cells[str(column.header)] for column in grid.columns))
    return output.Unbounded(grid)
