"""LIKE patterns: '%' is any run of characters, '_' any single character, ESCAPE makes either literal.

Matching takes time linear in the text, whatever the pattern (a filter's pattern, or one taken from a
message). A regex with a `.*` per '%' backtracks: against `%a%a%a%b` it tries every way of splitting
the text among the `.*`s, polynomial in the text's length with the number of '%' as the exponent. Here
the pattern is cut at its unescaped '%' into segments instead. A segment has a fixed length (each
literal and each '_' is one character), so:

- without a '%', the one segment must match the whole text;
- otherwise the first segment must match at the start, the last at the end, and each segment between
  them is taken at its leftmost occurrence after the previous one. Taking the earliest occurrence
  leaves the most text for what follows, so when any placement of the segments matches, this one
  does: no segment is ever tried at a second place.

A segment is searched with a regex of literals, `.` and `.{n}` (a run of '_': a fixed count) only, with
nothing to choose between (no variable repetition, no alternation), so from each start position the
engine compares at most the segment's length and never backtracks; each segment's search starts where
the previous one ended. Matching is O(len(text) * longest segment).

Matching is case-sensitive and ordinal, like the language's '=' on strings; '_' and '%' span newlines.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass


class PatternError(ValueError):
    """A LIKE pattern that cannot be compiled (it ends with the escape character)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Characters between two unescaped '%': literals, and '.' for each '_'."""

    regex: re.Pattern[str]
    length: int


@dataclass(frozen=True, slots=True)
class LikePattern:
    """A compiled LIKE pattern (picklable: a parsed filter travels to Spark executors)."""

    head: Segment
    """Before the first '%' (the whole pattern when ``tail`` is None)."""
    middle: tuple[Segment, ...]
    """Between the first and the last '%', empty ones left out."""
    tail: Segment | None
    """After the last '%'; None when the pattern has no '%'."""

    def matches(self, text: str) -> bool:
        """Whether the whole of ``text`` matches the pattern."""
        if self.tail is None:
            return self.head.regex.fullmatch(text) is not None
        end = len(text) - self.tail.length
        if end < self.head.length:
            return False
        if self.head.regex.match(text) is None or self.tail.regex.match(text, end) is None:
            return False
        position = self.head.length
        for segment in self.middle:
            found = segment.regex.search(text, position, end)
            if found is None:
                return False
            position = found.end()
        return True


def compile_like(pattern: str, escape: str | None = None) -> LikePattern:
    """The matcher of exactly the strings ``pattern`` matches. Raises PatternError."""
    segments = [_segment(parts) for parts in _split(pattern, escape)]
    if len(segments) == 1:
        return LikePattern(segments[0], (), None)
    middle = tuple(s for s in segments[1:-1] if s.length)
    return LikePattern(segments[0], middle, segments[-1])


def _split(pattern: str, escape: str | None) -> list[list[str]]:
    """The pattern's segments, each a list of regex pieces (one per character it matches)."""
    segments: list[list[str]] = [[]]
    chars = iter(pattern)
    for char in chars:
        if char == escape:  # first: an escape character of '%' or '_' escapes, it is no wildcard
            escaped = next(chars, None)
            if escaped is None:
                raise PatternError("LIKE pattern ends with its escape character")
            segments[-1].append(re.escape(escaped))
        elif char == "%":
            segments.append([])
        elif char == "_":
            segments[-1].append(".")
        else:
            segments[-1].append(re.escape(char))
    return segments


def _segment(pieces: list[str]) -> Segment:
    # A run of '_' becomes one counted `.{n}`: a fixed count is no choice, and the engine steps over it
    # at once instead of character by character.
    runs = [(piece, len(list(run))) for piece, run in itertools.groupby(pieces)]
    regex = "".join(f".{{{n}}}" if piece == "." and n > 1 else piece * n for piece, n in runs)
    return Segment(re.compile(regex, re.DOTALL), len(pieces))


@functools.lru_cache(maxsize=256)
def cached_like(pattern: str, escape: str | None) -> LikePattern | None:
    """For patterns only known per message: compiled once per distinct pattern, ``None`` if invalid."""
    try:
        return compile_like(pattern, escape)
    except PatternError:
        return None
