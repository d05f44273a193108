"""Every manifest of the invalid corpus is rejected with its own, specific message naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from federator.validation import validate_files

CORPUS = sorted((Path(__file__).resolve().parents[1] / "manifests" / "invalid").glob("*.yaml"))


def _expectation(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} must start with '# expect: <message>'"
    return first.removeprefix("# expect: ")


def test_corpus_is_large_and_each_expectation_is_distinct() -> None:
    expectations = [_expectation(p) for p in CORPUS]
    assert len(CORPUS) >= 30
    assert len(set(expectations)) == len(expectations), "two corpus files expect the same message"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_invalid_manifest_is_rejected_with_its_message(path: Path) -> None:
    outcomes = validate_files([path])
    problems = [str(p) for o in outcomes for p in o.problems]
    assert problems, f"{path.name} was accepted"
    expected = _expectation(path)
    assert any(expected in p for p in problems), f"expected {expected!r} in {problems}"
