"""Manifests are decoded as kubectl decodes them (sigs.k8s.io/yaml over go-yaml v2), not as PyYAML would:
what kubectl refuses is refused, what it accepts is read the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from federator.validation import validate_files
from federator.validation.documents import ManifestError, read_documents
from federator.validation.yamljson import MAX_VALUES

TASK = """\
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata:
  name: orders
spec:
  source:
    eventHub:
      connection: {emulator: {namespace: primary}}
      eventHubName: orders
{start}
  targets:
    - name: copy
      eventHub:
        connection: {emulator: {namespace: secondary}}
        eventHubName: orders
"""


def documents(text: str) -> list:
    return list(read_documents(text, "m.yaml"))


def body(text: str) -> object:
    [doc] = documents(text)
    return doc.body


def problems_of(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    return [str(p) for o in validate_files([path]) for p in o.problems]


def test_an_unquoted_timestamp_stays_a_string_and_is_accepted(tmp_path: Path) -> None:
    start = "      startPosition: {position: enqueuedTime, enqueuedTime: 2026-11-01T00:00:00Z}"
    text = TASK.replace("{start}", start)
    assert body("t: 2026-11-01T00:00:00Z\nd: 2026-11-01") == {"t": "2026-11-01T00:00:00Z", "d": "2026-11-01"}
    assert problems_of(tmp_path, text) == []


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        ("y", True),  # go-yaml v2 (YAML 1.1): `y`, `n`, `on`, `off` are booleans
        ("n", False),
        ("on", True),
        ("Off", False),
        ("1e3", 1000),  # a number for go-yaml, a string for PyYAML
        ("12:30", "12:30"),  # a base-60 integer for PyYAML only
        ("0x1F", 31),
        ("017", 15),
        ("1_000", 1000),
        ("~", None),
        ("'y'", "y"),
        ("!!str 42", "42"),
        ("=", "="),  # PyYAML has no constructor for this one
    ],
)
def test_scalars_resolve_as_go_yaml_resolves_them(scalar: str, value: object) -> None:
    assert body(f"v: {scalar}") == {"v": value}


def test_keys_become_strings() -> None:
    # `y: 1` is `"true": 1` for kubectl too (quote such keys).
    assert body("1: a\ntrue: b\n2.5: c\ny: d") == {"1": "a", "true": "d", "2.5": "c"}


def test_a_duplicate_key_is_refused_naming_both_lines(tmp_path: Path) -> None:
    text = TASK.replace("{start}", "      eventHubName: payments")
    assert problems_of(tmp_path, text) == [
        "spec.source.eventHub.eventHubName: duplicate key 'eventHubName' (lines 9 and 10)"
    ]


def test_every_duplicate_key_is_reported_and_validation_goes_on(tmp_path: Path) -> None:
    text = TASK.replace("{start}", "      eventHubName: payments\n      bogus: 1").replace(
        "  name: orders", "  name: orders\n  name: other"
    )
    assert problems_of(tmp_path, text) == [
        "metadata.name: duplicate key 'name' (lines 4 and 5)",
        "spec.source.eventHub.eventHubName: duplicate key 'eventHubName' (lines 10 and 11)",
        "spec.source.eventHub.bogus: unknown field "
        "(known: connection, consumerGroup, eventHubName, partitionIds, startPosition)",
    ]


def test_a_duplicate_key_refuses_other_projects_documents_too(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '1', a: '2'}\n"
    assert problems_of(tmp_path, text) == ["data.a: duplicate key 'a' (lines 4 and 4)"]


def test_merge_keys_are_expanded_and_explicit_keys_win_without_counting_as_duplicates() -> None:
    text = "base: &b {a: 1, b: 2}\nthing:\n  <<: *b\n  b: 3\n"
    [doc] = documents(text)
    assert doc.body["thing"] == {"b": 3, "a": 1}
    assert doc.problems == ()


def test_a_recursive_alias_is_a_problem_not_a_hang() -> None:
    [doc] = documents("a: &x [1, *x]")
    assert [str(p) for p in doc.problems] == [
        "a[1]: an alias refers to a node that contains it (recursive YAML)"
    ]


def test_excessive_aliasing_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    [doc] = documents("\n".join(lines))
    assert any(f"more than {MAX_VALUES} values" in p.message for p in doc.problems)


def test_values_json_cannot_hold_are_refused_at_their_path() -> None:
    [doc] = documents("spec:\n  weight: .inf\n  ratio: .nan\n")
    assert [str(p) for p in doc.problems] == [
        "spec.weight: '.inf' is not a JSON number (infinity and NaN have no JSON form)",
        "spec.ratio: '.nan' is not a JSON number (infinity and NaN have no JSON form)",
    ]


def test_a_collection_as_a_key_is_refused() -> None:
    [doc] = documents("? [a, b]\n: c\n")
    assert [str(p) for p in doc.problems] == [
        "a mapping key must be a string, number or boolean, not a collection"
    ]


LIST = """\
apiVersion: v1
kind: List
items:
  - apiVersion: federator.io/v1alpha1
    kind: ReplicationTask
    metadata: {name: orders}
    spec:
      source:
        eventHub: {connection: {emulator: {namespace: a}}, eventHubName: orders, bogus: 1}
      targets:
        - {name: copy, eventHub: {connection: {emulator: {namespace: b}}, eventHubName: orders}}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: c}
"""


def test_a_kind_list_is_expanded_and_each_item_checked(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text(LIST, encoding="utf-8")
    outcomes = validate_files([path])
    assert [(o.label, o.skipped, [str(p) for p in o.problems]) for o in outcomes] == [
        (
            f"{path}#0 items[0] ReplicationTask default/orders",
            None,
            [
                "spec.source.eventHub.bogus: unknown field "
                "(known: connection, consumerGroup, eventHubName, partitionIds, startPosition)"
            ],
        ),
        (f"{path}#0 items[1] ConfigMap default/c", "not a federator.io resource", []),
    ]


def test_an_item_of_a_list_keeps_the_lines_of_the_file() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c\n"
    )
    [doc] = documents(text)
    assert doc.item == "items[0]" and doc.line_of("metadata.name") == 7


def test_a_broken_file_is_one_error_that_does_not_quote_its_lines() -> None:
    secret = "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=c3VwZXJzZWNyZXQ="
    with pytest.raises(ManifestError) as raised:
        documents(f"a: {{b: '{secret}'\nc: [\n")
    assert "line" in str(raised.value) and "c3VwZXJzZWNyZXQ" not in str(raised.value)


def test_nesting_deeper_than_any_manifest_is_refused_not_a_crash() -> None:
    with pytest.raises(ManifestError, match="nested too deeply"):
        documents("a: " + "[" * 5000 + "]" * 5000)
    [doc] = documents("a: " + "[" * 150 + "]" * 150)
    assert any("nested deeper than" in p.message for p in doc.problems)
