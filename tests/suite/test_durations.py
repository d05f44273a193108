"""tests/durations.json, as ``--store-durations`` keeps it (support/durations.py)."""

from __future__ import annotations

from pathlib import Path

from support.durations import merged


def test_a_run_replaces_the_entries_of_its_files_and_keeps_the_others_of_files_that_exist(
    tmp_path: Path,
) -> None:
    for name in ("ran.py", "kept.py"):
        (tmp_path / name).touch()
    kept = {"ran.py::renamed_since": 4.0, "ran.py::t": 1.0, "kept.py::t": 2.0, "deleted.py::t": 3.0}

    assert merged(kept, {"ran.py::t": 1.5}, root=tmp_path) == {"kept.py::t": 2.0, "ran.py::t": 1.5}


def test_the_recorded_file_names_only_tests_that_exist() -> None:
    from support.durations import FILE, ROOT, load

    recorded = load(FILE)
    assert recorded, "tests/durations.json is empty"
    gone = sorted(
        {nodeid.split("::", 1)[0] for nodeid in recorded}
        - {str(p.relative_to(ROOT)) for p in ROOT.glob("tests/**/*.py")}
    )
    assert gone == [], (
        "tests/durations.json names deleted test files: `./dev test --store-durations` rewrites it"
    )
