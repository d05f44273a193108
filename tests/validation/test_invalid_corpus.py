"""Every manifest of the invalid corpus is rejected with its own, specific messages naming the field, in
the order of the document; every manifest of the valid corpus (tricky but admitted by a cluster) passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from federator.validation import validate_files

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
CORPUS = sorted((MANIFESTS / "invalid").glob("*.yaml"))
VALID = sorted((MANIFESTS / "valid").glob("*.yaml"))


def _expectations(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [line.removeprefix("# expect: ") for line in lines if line.startswith("# expect: ")]
    assert lines[0].startswith("# expect: "), f"{path.name} must start with '# expect: <message>'"
    return found


def test_corpus_is_large_and_each_expectation_is_distinct() -> None:
    expectations = [e for p in CORPUS for e in _expectations(p)]
    assert len(CORPUS) >= 80
    assert len(set(expectations)) == len(expectations), "two corpus files expect the same message"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_invalid_manifest_is_rejected_with_its_messages_in_document_order(path: Path) -> None:
    outcomes = validate_files([path])
    problems = [str(p) for o in outcomes for p in o.problems]
    assert problems, f"{path.name} was accepted"
    at = [next((i for i, p in enumerate(problems) if e in p), None) for e in _expectations(path)]
    assert None not in at, f"expected {_expectations(path)} in {problems}"
    assert at == sorted(at), f"problems out of document order: {problems}"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_tricky_but_valid_manifest_is_accepted(path: Path) -> None:
    outcomes = validate_files([path])
    assert [o for o in outcomes if not o.skipped], f"{path.name} has no Federator resource"
    assert [(o.label, [str(p) for p in o.problems]) for o in outcomes if not o.ok] == []
