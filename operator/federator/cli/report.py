"""How validation outcomes are shown on a terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from federator.validation import Outcome, Problem

_LAYER_NOTE = {
    "yaml": "refused by kubectl: not decodable",
    "schema": "refused by the API server",
    "cel": "refused by the API server: CEL rule",
    "semantic": "reported by the operator as Stalled; the Spark app would not start",
    "secret": "refused by Federator: credentials belong in a Secret",
    "policy": "reported by the operator as Stalled: the installer's policy (FEDERATOR_ALLOWED_*)",
    "warning": "admitted and run; --strict fails on it",
}


def print_validation(outcomes: list[Outcome], console: Console, strict: bool = False) -> bool:
    """Print every problem and warning with its field path (and line); True when every document is
    valid (and, with `strict`, has no warning)."""
    failed = warned = 0
    for outcome in outcomes:
        if outcome.skipped:
            console.print(f"[dim]skip[/] {escape(outcome.label)} ({outcome.skipped})")
            continue
        if not outcome.ok:
            failed += 1
            console.print(f"[red]FAIL[/] {escape(outcome.label)}")
        elif outcome.warnings:
            warned += 1
            console.print(f"[yellow]WARN[/] {escape(outcome.label)}")
        else:
            console.print(f"[green]ok[/]   {escape(outcome.label)}")
        for problem in [*outcome.problems, *outcome.warnings]:
            console.print(f"  - {escape(str(problem))} [dim]({_where(outcome, problem)})[/]")
    checked = sum(1 for o in outcomes if not o.skipped)
    skipped = len(outcomes) - checked
    console.print(f"{checked - failed} valid ({warned} with warnings), {failed} invalid, {skipped} skipped")
    return failed == 0 and not (strict and warned)


def _where(outcome: Outcome, problem: Problem) -> str:
    line = outcome.document.line_of(problem.path) if outcome.document is not None else None
    note = _LAYER_NOTE[problem.layer]
    return f"line {line}; {note}" if line is not None else note
