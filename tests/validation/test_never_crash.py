"""`validate` and `render` never crash: every example manifest, spoiled at random (nulls, deletions, type
swaps, duplicated keys, edited characters) and random YAML besides, yields problems (or objects), never an
exception. The number of examples is the tier's (tests/support/tiers.py): a fixed budget in CI's, a long run
in the full tier's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federator.cli.render import preview_document
from federator.settings import OperatorSettings
from federator.validation import Problem, check_document, check_object
from federator.validation.documents import ManifestError, read_documents
from federator.validation.semantic import semantic_problems
from federator.validation.warnings import spec_warnings
from federator_contract.api.kinds import BY_KIND

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
TEXTS = [p.read_text(encoding="utf-8") for p in EXAMPLES]
BODIES = [d for text in TEXTS for d in yaml.safe_load_all(text) if isinstance(d, dict)]
SETTINGS = OperatorSettings()

budget = settings(
    deadline=None,
    database=None,  # nothing written into the work tree; a failure prints its example to reproduce
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included: YAML can say them, JSON cannot
    | st.text(max_size=20)
    | st.sampled_from(["", "y", "no", "2026-11-01T00:00:00Z", "0x1F", "12:30", "ReplicationTask", "-1"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*path, i))
    return found


def _spoil(body: Any, path: tuple[Any, ...], how: str, replacement: Any) -> Any:
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    else:
        parent[last] = None if how == "null" else replacement
    return body


@st.composite
def spoiled_examples(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    original = draw(st.sampled_from(BODIES))
    body = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(body)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        body = _spoil(body, path, draw(st.sampled_from(["null", "delete", "swap"])), draw(values))
    text = yaml.safe_dump(body, sort_keys=False)
    if draw(st.booleans()):
        # A key written twice: a line repeated where it stands.
        lines = text.splitlines()
        at = draw(st.integers(0, len(lines) - 1))
        text = "\n".join([*lines[: at + 1], lines[at], *lines[at + 1 :]])
    return text, original


@st.composite
def edited_texts(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        text = text[:at] + draw(st.text(alphabet=" \n:-[]{}&*!|>'\"#,?abc01", max_size=6)) + text[at + cut :]
    return text


def _assert_never_raises(text: str, old: dict[str, Any] | None = None) -> None:
    try:
        documents = list(read_documents(text, "fuzz.yaml"))
    except ManifestError:
        return  # unreadable YAML: one problem for the file
    for doc in documents:
        verdict = check_document(doc)
        check_object(doc.body, old)  # as an update of `old`: the transition rules run too
        _assert_operator_reads_it(doc.body)
        assert all(isinstance(p, Problem) and isinstance(p.message, str) for p in verdict.problems)
        preview = preview_document(doc, SETTINGS)
        if verdict.problems:
            assert preview is not None and preview.reason == "InvalidSpec", "render must refuse it too"
        elif preview is not None and preview.ok:
            assert preview.objects, "an accepted manifest renders its children"


def _assert_operator_reads_it(body: Any) -> None:
    """The reconcilers' checks on a raw spec never raise either, and a spec they find no problem in is one
    the operator's model reads."""
    kind = (
        BY_KIND.get(body.get("kind"))
        if isinstance(body, dict) and isinstance(body.get("kind"), str)
        else None
    )
    if kind is None:
        return
    spec = body.get("spec") or {}
    spec_warnings(kind, spec)
    if not semantic_problems(kind, spec):
        kind.spec.model_validate(spec)


@budget
@given(spoiled_examples())
def test_spoiled_examples_yield_problems_never_exceptions(spoiled: tuple[str, dict[str, Any]]) -> None:
    _assert_never_raises(*spoiled)


@budget
@given(edited_texts())
def test_edited_example_texts_yield_problems_never_exceptions(text: str) -> None:
    _assert_never_raises(text)


@budget
@given(st.one_of(st.text(max_size=200), values.map(lambda v: yaml.safe_dump(v, sort_keys=False))))
def test_random_yaml_yields_problems_never_exceptions(text: str) -> None:
    _assert_never_raises(text)
