"""`kubectl federator lag`: one row per task and source partition, worst first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from federator.kubectl import output
from federator.kubectl.model import Obj, ago, headline, lag_of, meta, status_of


def rows(tasks: list[Obj]) -> list[dict[str, Any]]:
    """Every lag row of every task, worst first: most seconds behind, then most events behind; rows
    without figures (no batch yet) last."""
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
                }
            )
    return sorted(found, key=_badness)


def _badness(row: dict[str, Any]) -> tuple[bool, float, int, str, str, str]:
    seconds, events = row["secondsBehind"], row["eventsBehind"]
    return (
        seconds is None and events is None,
        -(seconds or 0.0),
        -(events or 0),
        row["namespace"],
        row["task"],
        row["partition"] or "",
    )


def table(found: list[dict[str, Any]], all_namespaces: bool, now: datetime | None = None) -> Table | Text:
    if not found:
        return Text("No ReplicationTasks found.")
    now = now or datetime.now(UTC)
    grid = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 2, 0, 0))
    if all_namespaces:
        grid.add_column("NAMESPACE")
    for name, justify in (
        ("TASK", "left"),
        ("PARTITION", "left"),
        ("LAG", "right"),
        ("EVENTS BEHIND", "right"),
        ("REPLICATED", "right"),
        ("LAST BATCH", "left"),
        ("SOURCE", "left"),
        ("STATE", "left"),
        ("REASON", "left"),
    ):
        grid.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in found:
        state_style = (
            "green" if row["state"] == "Ready" else ("bold red" if row["state"] == "Stalled" else "yellow")
        )
        cells = [
            row["task"],
            "all" if row["partition"] is None else row["partition"],
            output.seconds(row["secondsBehind"]),
            output.count(row["eventsBehind"]),
            output.count(row["eventsReplicated"]),
            ago(row["lastBatchTime"], now) or "never",
            row["sourceMember"] or "",
            Text(row["state"], style=state_style),
            row["reason"],
        ]
        grid.add_row(*([row["namespace"]] if all_namespaces else []), *cells)
    return grid
