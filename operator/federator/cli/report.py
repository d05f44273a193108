"""How validation outcomes are shown on a terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from federator.validation import Outcome

_LAYER_NOTE = {
    "yaml": "unreadable",
    "schema": "refused by the API server",
    "cel": "refused by the API server: CEL rule",
    "semantic": "reported by the operator as Stalled",
}


def print_validation(outcomes: list[Outcome], console: Console) -> bool:
    """Print every problem with its field path; True when every document is valid."""
    failed = 0
    for outcome in outcomes:
        if outcome.skipped:
            console.print(f"[dim]skip[/] {escape(outcome.label)} ({outcome.skipped})")
        elif outcome.ok:
            console.print(f"[green]ok[/]   {escape(outcome.label)}")
        else:
            failed += 1
            console.print(f"[red]FAIL[/] {escape(outcome.label)}")
            for problem in outcome.problems:
                console.print(f"  - {escape(str(problem))} [dim]({_LAYER_NOTE[problem.layer]})[/]")
    checked = sum(1 for o in outcomes if not o.skipped)
    console.print(f"{checked - failed} valid, {failed} invalid, {len(outcomes) - checked} skipped")
    return failed == 0
