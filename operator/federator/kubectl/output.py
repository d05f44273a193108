"""How the plugin writes to the terminal: rich, with colours only on a terminal and never with `NO_COLOR`
set (rich honours both); `-o json|yaml` for programs."""

from __future__ import annotations

import json
import os
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from federator import plainyaml
from federator.kubectl.model import ERROR, NOTE, OK, WARNING, ConditionView

_UNLIMITED = 10_000
STYLES = {OK: "green", NOTE: "yellow", WARNING: "yellow", ERROR: "bold red"}
MARKS = {OK: "✓", NOTE: "…", WARNING: "!", ERROR: "✗"}


def console(stderr: bool = False) -> Console:
    # soft_wrap off: long messages wrap inside tables and trees instead of running off the screen; a pipe
    # gets COLUMNS (or 120) columns so that nothing is cut.
    width = None if _is_terminal(stderr) else int(os.environ.get("COLUMNS", "120"))
    return Console(stderr=stderr, highlight=False, width=width)


def _is_terminal(stderr: bool) -> bool:
    stream = 2 if stderr else 1
    try:
        return os.isatty(stream)
    except OSError:
        return False


class Unbounded:
    """A table drawn at its natural width whatever the terminal's, so that no column is dropped or cut
    (the terminal wraps a long row, as it does kubectl's); trailing blanks are left out."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = Measurement.get(console, options.update_width(_UNLIMITED), self.inner).maximum
        wide = options.update_width(max(natural, 1))
        for line in console.render_lines(self.inner, wide, pad=False):
            yield from _rstrip(line)
            yield Segment.line()


def _rstrip(line: list[Segment]) -> list[Segment]:
    while line and not line[-1].control and not line[-1].text.rstrip():
        line = line[:-1]
    if line and not line[-1].control:
        last = line[-1]
        line = [*line[:-1], Segment(last.text.rstrip(), last.style)]
    return line


def mark(severity: int) -> Text:
    return Text(MARKS[severity], style=STYLES[severity])


def condition_line(c: ConditionView) -> Text:
    """`✗ Stalled=True SecretNotFound: Secret orders-weu not found` (the message is never cut)."""
    line = Text()
    line.append_text(mark(c.severity))
    line.append(f" {c.type}={c.status} ", style="bold" if c.severity else "")
    line.append(c.reason, style=STYLES[c.severity] if c.severity else "")
    if c.message:
        line.append(f": {c.message}")
    return line


def state_text(state: str, reason: str, severity: int) -> Text:
    return Text.assemble(
        (state, STYLES[severity]), " ", (reason, "dim" if severity == OK else STYLES[severity])
    )


def dump(data: Any, fmt: str, out: Console) -> None:
    """`json` or `yaml`, plain (no markup, no highlighting), to stdout."""
    text = json.dumps(data, indent=2, default=str) if fmt == "json" else plainyaml.dump(data)
    out.print(text, markup=False, highlight=False, soft_wrap=True, end="" if text.endswith("\n") else "\n")


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}s"


def count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def safe(text: Any) -> str:
    return escape(str(text))
