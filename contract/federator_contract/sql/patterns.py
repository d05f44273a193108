"""LIKE patterns: '%' is any run of characters, '_' any single character, ESCAPE makes either literal."""

from __future__ import annotations

import functools
import re


class PatternError(ValueError):
    """A LIKE pattern that cannot be compiled (it ends with the escape character)."""


def compile_like(pattern: str, escape: str | None = None) -> re.Pattern[str]:
    """A regex that fully matches exactly the strings ``pattern`` matches. Raises PatternError."""
    parts: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == escape:
            escaped = next(chars, None)
            if escaped is None:
                raise PatternError("LIKE pattern ends with its escape character")
            parts.append(re.escape(escaped))
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    # Matching is case-sensitive and ordinal, like the language's '=' on strings.
    return re.compile("".join(parts), re.DOTALL)


@functools.lru_cache(maxsize=256)
def cached_like(pattern: str, escape: str | None) -> re.Pattern[str] | None:
    """For patterns only known per message: compiled once per distinct pattern, ``None`` if invalid."""
    try:
        return compile_like(pattern, escape)
    except PatternError:
        return None
