"""LIKE matching benchmark: how long the shared matcher (`federator_contract.sql.patterns`) takes on texts of
100 kB and 1 MB against patterns written to make a backtracking matcher try every split of the text,
and, in the same run, the backtracking regex LIKE compiled to before (`.*` per '%') on texts short
enough for it to finish. Final line: JSON.

    .venv/bin/python -m bench.like_matching [--repeats 5] [--old-chars 200]

Figures, per pattern:

* ``per_mb_s`` at each size and ``growth``: seconds per MB at 1 MB over seconds per MB at 100 kB
  (1.0 is linear; a quadratic matcher would show 10; None when the matcher answered in under
  0.1 ms without scanning the text);
* ``old``: the backtracking regex and the matcher on ``--old-chars`` and twice as many characters, the
  ratio of their times, and the regex's ``growth_exponent`` (time grows as length to this power; the
  matcher's is about 1).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.processes import load
from federator_contract.sql.patterns import compile_like

KB, MB = 1 << 10, 1 << 20
MEASURABLE_S = 0.0001


@dataclass(frozen=True)
class Case:
    pattern: str
    escape: str | None
    unit: str
    """The text is this repeated: every character a partial match of the pattern, none a full one."""

    def text(self, size: int) -> str:
        return self.unit * (size // len(self.unit))


CASES = (
    # Not matching at the end: the matcher answers at once, the regex tries every split first.
    Case("%a%a%a%b", None, "a"),
    Case("_%_%_%b", None, "a"),
    # Ending in '%': the matcher must scan the whole text for the last segment.
    Case("%a%a%a%b%", None, "a"),
    Case("_%_%_%b%", None, "a"),
    Case("%a!%%a!%%a!%%b%", "!", "a%"),  # escaped '%' between the wildcards
    Case("%a_a_a_a_b%", None, "a"),
    Case("%" + "a_" * 100 + "b%", None, "a"),  # a 200-character segment: the O(n * segment) bound
)


def backtracking_like(pattern: str, escape: str | None) -> re.Pattern[str]:
    """The regex `sql/patterns.py` compiled a LIKE pattern to before it matched linearly: the baseline."""
    parts: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == escape:
            parts.append(re.escape(next(chars)))
        else:
            parts.append({"%": ".*", "_": "."}.get(char) or re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def seconds(match: Callable[[str], object], text: str, repeats: int) -> float:
    """The best of ``repeats`` runs (the least disturbed by the rest of the machine)."""
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        match(text)
        best = min(best, time.perf_counter() - started)
    return best


def measure(case: Case, repeats: int, old_chars: int) -> dict[str, Any]:
    matcher = compile_like(case.pattern, case.escape)
    large = seconds(matcher.matches, case.text(MB), repeats)
    small = seconds(matcher.matches, case.text(100 * KB), repeats)
    per_mb = {"100kB": small * MB / (100 * KB), "1MB": large}
    old = backtracking_like(case.pattern, case.escape)
    short, double = case.text(old_chars), case.text(2 * old_chars)
    old_short = seconds(old.fullmatch, short, 1)
    old_double = seconds(old.fullmatch, double, 1)
    new_double = seconds(matcher.matches, double, repeats)
    return {
        "per_mb_s": {size: round(s, 5) for size, s in per_mb.items()},
        # Under 0.1 ms the ratio is noise: such a pattern was answered without scanning the text.
        "growth": round(per_mb["1MB"] / per_mb["100kB"], 2) if large >= MEASURABLE_S else None,
        "old": {
            "chars": [len(short), len(double)],
            "regex_s": [round(old_short, 5), round(old_double, 5)],
            "matcher_s": round(new_double, 6),
            "regex_over_matcher": round(old_double / max(new_double, 1e-9)),
            "growth_exponent": round(math.log2(max(old_double, 1e-9) / max(old_short, 1e-9)), 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure of the matcher (best kept)")
    parser.add_argument("--old-chars", type=int, default=200, help="text length for the backtracking regex")
    args = parser.parse_args()
    patterns = {case.pattern: measure(case, args.repeats, args.old_chars) for case in CASES}
    for pattern, figures in patterns.items():
        print(f"{pattern[:24]:>24}: {figures}")
    result = {
        "text_bytes": {"small": 100 * KB, "large": MB},
        "patterns": patterns,
        "worst_1mb_s": max(p["per_mb_s"]["1MB"] for p in patterns.values()),
        "worst_growth": max(p["growth"] for p in patterns.values() if p["growth"] is not None),
        "loadavg": load(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
