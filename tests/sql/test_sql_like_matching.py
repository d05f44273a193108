"""LIKE matching: the same answers as the textbook definition of the pattern language, for every pattern,
escape and text (the linear matcher of `sql/patterns.py` against a reference matcher written from the
definition), and the compiled pattern survives the trip to a Spark executor."""

from __future__ import annotations

import functools
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federator_contract.sql import SqlMessage, parse_filter
from federator_contract.sql.patterns import PatternError, compile_like

# Wildcards, the escape character, newline and plain letters: every case of the definition.
PATTERN_CHARS = "ab%_!\n"
TEXT_CHARS = "ab%_!\n"


def reference_like(pattern: str, escape: str | None, text: str) -> bool:
    """The definition, by recursion on pattern and text: '%' is any run (possibly empty), '_' exactly one
    character, the escape character makes the next character literal."""
    tokens: list[tuple[str, str]] = []  # ("%", ""), ("_", ""), or ("=", char)
    chars = iter(pattern)
    for char in chars:
        if char == escape:
            tokens.append(("=", next(chars)))
        elif char in "%_":
            tokens.append((char, ""))
        else:
            tokens.append(("=", char))

    @functools.cache
    def match(t: int, i: int) -> bool:
        if t == len(tokens):
            return i == len(text)
        kind, char = tokens[t]
        if kind == "%":
            return match(t + 1, i) or (i < len(text) and match(t, i + 1))
        if i == len(text):
            return False
        return (kind == "_" or text[i] == char) and match(t + 1, i + 1)

    return match(0, 0)


def escaped_patterns() -> st.SearchStrategy[tuple[str, str | None]]:
    """A pattern with no escape, or with one (which may itself be a wildcard) that it never ends with."""
    plain = st.tuples(st.text(PATTERN_CHARS, max_size=8), st.none())
    with_escape = st.sampled_from("!%_a").flatmap(
        lambda esc: st.tuples(
            st.text(PATTERN_CHARS, max_size=8).filter(lambda p: not _dangling(p, esc)), st.just(esc)
        )
    )
    return st.one_of(plain, with_escape)


def _dangling(pattern: str, escape: str) -> bool:
    chars = iter(pattern)
    return any(char == escape and next(chars, None) is None for char in chars)


@settings(max_examples=1500, deadline=None)
@given(escaped_patterns(), st.text(TEXT_CHARS, max_size=10))
def test_matches_exactly_what_the_definition_matches(case: tuple[str, str | None], text: str) -> None:
    pattern, escape = case
    assert compile_like(pattern, escape).matches(text) is reference_like(pattern, escape, text)


@pytest.mark.parametrize(
    ("pattern", "escape", "text", "expected"),
    [
        pytest.param("%a%a%a%b", None, "a" * 50 + "b", True, id="middle-segments-leftmost"),
        pytest.param("%a%a%a%b", None, "a" * 50, False, id="middle-segments-no-final-b"),
        pytest.param("ab%ba", None, "aba", False, id="head-and-tail-cannot-overlap"),
        pytest.param("ab%ba", None, "abba", True, id="head-and-tail-adjacent"),
        pytest.param("a%_%b", None, "ab", False, id="underscore-between-needs-a-character"),
        pytest.param("a%_%b", None, "axb", True, id="underscore-between"),
        pytest.param("%%", None, "", True, id="only-percents-match-empty"),
        pytest.param("x%%y", "%", "x%y", True, id="percent-as-escape-escapes-a-percent"),
        pytest.param("x%%y", "%", "x%", False, id="percent-as-escape-is-no-wildcard"),
        pytest.param("__", "_", "_", True, id="underscore-as-escape"),
        pytest.param("a!bc", "!", "abc", True, id="escaping-a-plain-character"),
    ],
)
def test_edge_cases(pattern: str, escape: str | None, text: str, expected: bool) -> None:
    assert compile_like(pattern, escape).matches(text) is expected
    assert reference_like(pattern, escape, text) is expected


@pytest.mark.parametrize(
    ("pattern", "escape", "unit"),
    [("%a%a%a%b", None, "a"), ("_%_%_%b", None, "a"), ("%a!%%a!%%a!%%b%", "!", "a%")],
)
def test_a_megabyte_matches_where_the_pattern_says(pattern: str, escape: str | None, unit: str) -> None:
    """The texts tests/security feeds these patterns, answered both ways (no match there, a match here)."""
    text = unit * ((1 << 20) // len(unit))
    assert compile_like(pattern, escape).matches(text + "b") is True
    assert compile_like(pattern, escape).matches(text) is False


def test_a_dangling_escape_is_refused() -> None:
    with pytest.raises(PatternError, match="ends with its escape character"):
        compile_like("a%!", "!")


def test_a_parsed_like_filter_pickles_with_its_compiled_pattern() -> None:
    """Spark ships parsed filters to executors."""
    condition = pickle.loads(pickle.dumps(parse_filter("v LIKE 'a%b_c' ESCAPE '!'")))
    assert condition.matches(SqlMessage(user={"v": "a--bxc"})) is True
    assert condition.matches(SqlMessage(user={"v": "a--bc"})) is False
